set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'accuracy-vs-samples.svg'
set title "test accuracy per sample processed\nNIID-Bench's MNIST table: FedAvg, FedProx, SCAFFOLD, FedNova under label skew" noenhanced
set xlabel 'samples processed by all clients (cumulative)' noenhanced
set ylabel 'test accuracy (%)' noenhanced
set grid
set key outside right top noenhanced
plot 'accuracy-vs-samples.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.4 lc 1 dt 1 title 'iid-fedavg', 'accuracy-vs-samples.svg.dat' index 1 using 1:2 with linespoints pt 7 ps 0.4 lc 2 dt 1 title 'iid-scaffold', 'accuracy-vs-samples.svg.dat' index 2 using 1:2 with linespoints pt 7 ps 0.4 lc 3 dt 1 title 'c1-fedavg', 'accuracy-vs-samples.svg.dat' index 3 using 1:2 with linespoints pt 7 ps 0.4 lc 4 dt 1 title 'c1-scaffold'
