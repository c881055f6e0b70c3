set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'lr-scaling-carried.svg'
set title "Final test accuracy with the single worker's best rate (0.8) carried over by each rule\n(diverged runs left out)" noenhanced
set xlabel 'workers N (50 samples each per step)' noenhanced
set ylabel 'final test accuracy (%)' noenhanced
set grid
set key outside right top noenhanced
set logscale x
plot 'lr-scaling-carried.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.4 lc 1 dt 1 title 'none', 'lr-scaling-carried.svg.dat' index 1 using 1:2 with linespoints pt 7 ps 0.4 lc 2 dt 1 title 'linear', 'lr-scaling-carried.svg.dat' index 2 using 1:2 with linespoints pt 7 ps 0.4 lc 3 dt 1 title 'sqrt', 'lr-scaling-carried.svg.dat' index 3 using 1:2 with linespoints pt 7 ps 0.4 lc 4 dt 1 title 'none + warm-up', 'lr-scaling-carried.svg.dat' index 4 using 1:2 with linespoints pt 7 ps 0.4 lc 5 dt 1 title 'linear + warm-up', 'lr-scaling-carried.svg.dat' index 5 using 1:2 with linespoints pt 7 ps 0.4 lc 6 dt 1 title 'sqrt + warm-up'
