set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'test-loss-vs-samples.svg'
set title "test loss per sample processed (mean over seeds; band: min to max)\nDP-FedAvg: accuracy against the privacy budget, FedAvg 2NN over 1,000 clients" noenhanced
set xlabel 'samples processed by all clients (cumulative)' noenhanced
set ylabel 'test loss (mean over the test set)' noenhanced
set grid
set key outside right top noenhanced
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
plot 'test-loss-vs-samples.svg.dat' index 0 using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc 1 notitle, 'test-loss-vs-samples.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.5 lc 1 dt 1 title 'no-clip', 'test-loss-vs-samples.svg.dat' index 1 using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc 2 notitle, 'test-loss-vs-samples.svg.dat' index 1 using 1:2 with linespoints pt 5 ps 0.5 lc 2 dt 2 title 'clip', 'test-loss-vs-samples.svg.dat' index 2 using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc 3 notitle, 'test-loss-vs-samples.svg.dat' index 2 using 1:2 with linespoints pt 9 ps 0.5 lc 3 dt 3 title 'z-1', 'test-loss-vs-samples.svg.dat' index 3 using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc 4 notitle, 'test-loss-vs-samples.svg.dat' index 3 using 1:2 with linespoints pt 11 ps 0.5 lc 4 dt 4 title 'z-2', 'test-loss-vs-samples.svg.dat' index 4 using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc 5 notitle, 'test-loss-vs-samples.svg.dat' index 4 using 1:2 with linespoints pt 13 ps 0.5 lc 5 dt 5 title 'z-4', 'test-loss-vs-samples.svg.dat' index 5 using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc 6 notitle, 'test-loss-vs-samples.svg.dat' index 5 using 1:2 with linespoints pt 4 ps 0.5 lc 6 dt 1 title 'z-8', 'test-loss-vs-samples.svg.dat' index 6 using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc 7 notitle, 'test-loss-vs-samples.svg.dat' index 6 using 1:2 with linespoints pt 6 ps 0.5 lc 7 dt 2 title 'z-1-adaptive', 'test-loss-vs-samples.svg.dat' index 7 using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc 8 notitle, 'test-loss-vs-samples.svg.dat' index 7 using 1:2 with linespoints pt 8 ps 0.5 lc 8 dt 3 title 'z-4-adaptive'
