set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'update-cosine-vs-round.svg'
set title "agreement of client updates\nFedAvg and FedProx on Synthetic(alpha, beta): logistic regression" noenhanced
set xlabel 'round' noenhanced
set ylabel 'mean pairwise cosine of client updates' noenhanced
set grid
set key outside right top noenhanced
plot 'update-cosine-vs-round.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.4 lc 1 dt 1 title 'iid', 'update-cosine-vs-round.svg.dat' index 1 using 1:2 with linespoints pt 7 ps 0.4 lc 2 dt 1 title 'synthetic-0-0', 'update-cosine-vs-round.svg.dat' index 2 using 1:2 with linespoints pt 7 ps 0.4 lc 3 dt 1 title 'synthetic-0.5-0.5', 'update-cosine-vs-round.svg.dat' index 3 using 1:2 with linespoints pt 7 ps 0.4 lc 4 dt 1 title 'synthetic-1-1', 'update-cosine-vs-round.svg.dat' index 4 using 1:2 with linespoints pt 7 ps 0.4 lc 5 dt 1 title 'fedprox-iid', 'update-cosine-vs-round.svg.dat' index 5 using 1:2 with linespoints pt 7 ps 0.4 lc 6 dt 1 title 'fedprox-0-0', 'update-cosine-vs-round.svg.dat' index 6 using 1:2 with linespoints pt 7 ps 0.4 lc 7 dt 1 title 'fedprox-0.5-0.5', 'update-cosine-vs-round.svg.dat' index 7 using 1:2 with linespoints pt 7 ps 0.4 lc 8 dt 1 title 'fedprox-1-1'
