set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'drift-vs-round.svg'
set title "drift: averaged deltas vs K steps of the averaged gradient\nGradient averaging vs model averaging with K local steps" noenhanced
set xlabel 'round' noenhanced
set ylabel '||avg delta - avg K-step linear update|| / ||avg linear update||' noenhanced
set grid
set key outside right top noenhanced
set xtics 1
set logscale y
plot 'drift-vs-round.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.4 lc 1 dt 1 title 'iid-K1', 'drift-vs-round.svg.dat' index 1 using 1:2 with linespoints pt 7 ps 0.4 lc 2 dt 1 title 'iid-K2', 'drift-vs-round.svg.dat' index 2 using 1:2 with linespoints pt 7 ps 0.4 lc 3 dt 1 title 'iid-K5', 'drift-vs-round.svg.dat' index 3 using 1:2 with linespoints pt 7 ps 0.4 lc 4 dt 1 title 'iid-K10', 'drift-vs-round.svg.dat' index 4 using 1:2 with linespoints pt 7 ps 0.4 lc 5 dt 1 title 'iid-K20', 'drift-vs-round.svg.dat' index 5 using 1:2 with linespoints pt 7 ps 0.4 lc 6 dt 1 title 'shards-K1', 'drift-vs-round.svg.dat' index 6 using 1:2 with linespoints pt 7 ps 0.4 lc 7 dt 1 title 'shards-K2', 'drift-vs-round.svg.dat' index 7 using 1:2 with linespoints pt 7 ps 0.4 lc 8 dt 1 title 'shards-K5', 'drift-vs-round.svg.dat' index 8 using 1:2 with linespoints pt 7 ps 0.4 lc 9 dt 2 title 'shards-K10', 'drift-vs-round.svg.dat' index 9 using 1:2 with linespoints pt 7 ps 0.4 lc 10 dt 2 title 'shards-K20'
