set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'delay-model.svg'
set title "delay model: round time per N, predicted and measured\nData parallelism at a fixed global batch: memory, bytes and time per client" noenhanced
set xlabel 'processes N (one client each)' noenhanced
set ylabel 'round time (ms, median over rounds)' noenhanced
set grid
set key outside right top noenhanced
set logscale x
plot 'delay-model.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.4 lc 1 dt 1 title 'measured', 'delay-model.svg.dat' index 1 using 1:2 with linespoints pt 7 ps 0.4 lc 2 dt 1 title 'seed model (B/N)', 'delay-model.svg.dat' index 2 using 1:2 with linespoints pt 7 ps 0.4 lc 3 dt 1 title 'cores-aware model (B / min(N, P))'
