set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'accuracy-vs-round.svg'
set title "test accuracy per round\nGradient averaging vs model averaging with K local steps" noenhanced
set xlabel 'round' noenhanced
set ylabel 'test accuracy (%)' noenhanced
set grid
set key outside right top noenhanced
set xtics 1
plot 'accuracy-vs-round.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.4 lc 1 dt 1 title 'iid-gradient', 'accuracy-vs-round.svg.dat' index 1 using 1:2 with linespoints pt 7 ps 0.4 lc 2 dt 1 title 'iid-K1', 'accuracy-vs-round.svg.dat' index 2 using 1:2 with linespoints pt 7 ps 0.4 lc 3 dt 1 title 'iid-K2', 'accuracy-vs-round.svg.dat' index 3 using 1:2 with linespoints pt 7 ps 0.4 lc 4 dt 1 title 'iid-K5', 'accuracy-vs-round.svg.dat' index 4 using 1:2 with linespoints pt 7 ps 0.4 lc 5 dt 1 title 'iid-K10', 'accuracy-vs-round.svg.dat' index 5 using 1:2 with linespoints pt 7 ps 0.4 lc 6 dt 1 title 'iid-K20', 'accuracy-vs-round.svg.dat' index 6 using 1:2 with linespoints pt 7 ps 0.4 lc 7 dt 1 title 'shards-gradient', 'accuracy-vs-round.svg.dat' index 7 using 1:2 with linespoints pt 7 ps 0.4 lc 8 dt 1 title 'shards-K1', 'accuracy-vs-round.svg.dat' index 8 using 1:2 with linespoints pt 7 ps 0.4 lc 9 dt 2 title 'shards-K2', 'accuracy-vs-round.svg.dat' index 9 using 1:2 with linespoints pt 7 ps 0.4 lc 10 dt 2 title 'shards-K5', 'accuracy-vs-round.svg.dat' index 10 using 1:2 with linespoints pt 7 ps 0.4 lc 11 dt 2 title 'shards-K10', 'accuracy-vs-round.svg.dat' index 11 using 1:2 with linespoints pt 7 ps 0.4 lc 12 dt 2 title 'shards-K20'
