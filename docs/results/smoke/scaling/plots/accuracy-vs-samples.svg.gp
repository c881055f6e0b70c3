set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'accuracy-vs-samples.svg'
set title "test accuracy per sample processed\nData parallelism at a fixed global batch: memory, bytes and time per client" noenhanced
set xlabel 'samples processed by all clients (cumulative)' noenhanced
set ylabel 'test accuracy (%)' noenhanced
set grid
set key outside right top noenhanced
set xtics 1
plot 'accuracy-vs-samples.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.4 lc 1 dt 1 title 'N1', 'accuracy-vs-samples.svg.dat' index 1 using 1:2 with linespoints pt 7 ps 0.4 lc 2 dt 1 title 'N2', 'accuracy-vs-samples.svg.dat' index 2 using 1:2 with linespoints pt 7 ps 0.4 lc 3 dt 1 title 'N4', 'accuracy-vs-samples.svg.dat' index 3 using 1:2 with linespoints pt 7 ps 0.4 lc 4 dt 1 title 'N8'
