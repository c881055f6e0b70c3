set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'weight-divergence-vs-round.svg'
set title "weight divergence from the paired reference run\nGradient averaging vs model averaging with K local steps" noenhanced
set xlabel 'round' noenhanced
set ylabel '||w_run - w_reference|| / ||w_reference||' noenhanced
set grid
set key outside right top noenhanced
set xtics 1
set logscale y
plot 'weight-divergence-vs-round.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.4 lc 1 dt 1 title 'iid-K1', 'weight-divergence-vs-round.svg.dat' index 1 using 1:2 with linespoints pt 7 ps 0.4 lc 2 dt 1 title 'iid-K2', 'weight-divergence-vs-round.svg.dat' index 2 using 1:2 with linespoints pt 7 ps 0.4 lc 3 dt 1 title 'iid-K5', 'weight-divergence-vs-round.svg.dat' index 3 using 1:2 with linespoints pt 7 ps 0.4 lc 4 dt 1 title 'iid-K10', 'weight-divergence-vs-round.svg.dat' index 4 using 1:2 with linespoints pt 7 ps 0.4 lc 5 dt 1 title 'iid-K20', 'weight-divergence-vs-round.svg.dat' index 5 using 1:2 with linespoints pt 7 ps 0.4 lc 6 dt 1 title 'shards-K1', 'weight-divergence-vs-round.svg.dat' index 6 using 1:2 with linespoints pt 7 ps 0.4 lc 7 dt 1 title 'shards-K2', 'weight-divergence-vs-round.svg.dat' index 7 using 1:2 with linespoints pt 7 ps 0.4 lc 8 dt 1 title 'shards-K5', 'weight-divergence-vs-round.svg.dat' index 8 using 1:2 with linespoints pt 7 ps 0.4 lc 9 dt 2 title 'shards-K10', 'weight-divergence-vs-round.svg.dat' index 9 using 1:2 with linespoints pt 7 ps 0.4 lc 10 dt 2 title 'shards-K20'
