set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'accuracy-vs-samples.svg'
set title "test accuracy per sample processed\nData-parallel topologies and asynchronous SGD" noenhanced
set xlabel 'samples processed by all clients (cumulative)' noenhanced
set ylabel 'test accuracy (%)' noenhanced
set grid
set key below noenhanced
set linetype 1 lc rgb '#0072b2' lw 1.5
set linetype 2 lc rgb '#d55e00' lw 1.5
set linetype 3 lc rgb '#009e73' lw 1.5
set linetype 4 lc rgb '#cc79a7' lw 1.5
set linetype 5 lc rgb '#e69f00' lw 1.5
set linetype 6 lc rgb '#56b4e9' lw 1.5
set linetype 7 lc rgb '#000000' lw 1.5
set linetype 8 lc rgb '#8c564b' lw 1.5
set linetype cycle 8
set format x '%.1s%c'
plot 'accuracy-vs-samples.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.5 lc 1 dt 1 title 'ps-2nn-N2', 'accuracy-vs-samples.svg.dat' index 1 using 1:2 with linespoints pt 5 ps 0.5 lc 2 dt 2 title 'master-2nn-N2', 'accuracy-vs-samples.svg.dat' index 2 using 1:2 with linespoints pt 9 ps 0.5 lc 3 dt 3 title 'ring-2nn-N2', 'accuracy-vs-samples.svg.dat' index 3 using 1:2 with linespoints pt 11 ps 0.5 lc 4 dt 4 title 'ps-2nn-N4', 'accuracy-vs-samples.svg.dat' index 4 using 1:2 with linespoints pt 13 ps 0.5 lc 5 dt 5 title 'master-2nn-N4', 'accuracy-vs-samples.svg.dat' index 5 using 1:2 with linespoints pt 4 ps 0.5 lc 6 dt 1 title 'ring-2nn-N4', 'accuracy-vs-samples.svg.dat' index 6 using 1:2 with linespoints pt 6 ps 0.5 lc 7 dt 2 title 'ps-2nn-N8', 'accuracy-vs-samples.svg.dat' index 7 using 1:2 with linespoints pt 8 ps 0.5 lc 8 dt 3 title 'master-2nn-N8', 'accuracy-vs-samples.svg.dat' index 8 using 1:2 with linespoints pt 7 ps 0.5 lc 9 dt 4 title 'ring-2nn-N8', 'accuracy-vs-samples.svg.dat' index 9 using 1:2 with linespoints pt 5 ps 0.5 lc 10 dt 5 title 'ps-mlp1m-N2', 'accuracy-vs-samples.svg.dat' index 10 using 1:2 with linespoints pt 9 ps 0.5 lc 11 dt 1 title 'master-mlp1m-N2', 'accuracy-vs-samples.svg.dat' index 11 using 1:2 with linespoints pt 11 ps 0.5 lc 12 dt 2 title 'ring-mlp1m-N2', 'accuracy-vs-samples.svg.dat' index 12 using 1:2 with linespoints pt 13 ps 0.5 lc 13 dt 3 title 'ps-mlp1m-N4', 'accuracy-vs-samples.svg.dat' index 13 using 1:2 with linespoints pt 4 ps 0.5 lc 14 dt 4 title 'master-mlp1m-N4', 'accuracy-vs-samples.svg.dat' index 14 using 1:2 with linespoints pt 6 ps 0.5 lc 15 dt 5 title 'ring-mlp1m-N4', 'accuracy-vs-samples.svg.dat' index 15 using 1:2 with linespoints pt 8 ps 0.5 lc 16 dt 1 title 'ps-mlp1m-N8', 'accuracy-vs-samples.svg.dat' index 16 using 1:2 with linespoints pt 7 ps 0.5 lc 17 dt 2 title 'master-mlp1m-N8', 'accuracy-vs-samples.svg.dat' index 17 using 1:2 with linespoints pt 5 ps 0.5 lc 18 dt 3 title 'ring-mlp1m-N8', 'accuracy-vs-samples.svg.dat' index 18 using 1:2 with linespoints pt 9 ps 0.5 lc 19 dt 4 title 'sync-straggler', 'accuracy-vs-samples.svg.dat' index 19 using 1:2 with linespoints pt 11 ps 0.5 lc 20 dt 5 title 'async-straggler', 'accuracy-vs-samples.svg.dat' index 20 using 1:2 with linespoints pt 13 ps 0.5 lc 21 dt 1 title 'async-straggler-lr-over-tau'
