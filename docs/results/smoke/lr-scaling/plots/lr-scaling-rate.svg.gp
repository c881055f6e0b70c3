set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'lr-scaling-rate.svg'
set title "Final test accuracy against the effective learning rate\n(every rule's runs on one curve per N: a rule only chooses the rate; diverged runs left out)" noenhanced
set xlabel 'effective learning rate (after the scaling rule)' noenhanced
set ylabel 'final test accuracy (%)' noenhanced
set grid
set key outside right top noenhanced
set logscale x
plot 'lr-scaling-rate.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.4 lc 1 dt 1 title 'N = 1', 'lr-scaling-rate.svg.dat' index 1 using 1:2 with linespoints pt 7 ps 0.4 lc 2 dt 1 title 'N = 8'
