set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'accuracy-vs-round.svg'
set title "test accuracy per round\nCommunication: compression with and without error feedback, DP and FL" noenhanced
set xlabel 'round' noenhanced
set ylabel 'test accuracy (%)' noenhanced
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
plot 'accuracy-vs-round.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.5 lc 1 dt 1 title 'dp-none', 'accuracy-vs-round.svg.dat' index 1 using 1:2 with linespoints pt 5 ps 0.5 lc 2 dt 2 title 'dp-topk1', 'accuracy-vs-round.svg.dat' index 2 using 1:2 with linespoints pt 9 ps 0.5 lc 3 dt 3 title 'dp-topk1-ef', 'accuracy-vs-round.svg.dat' index 3 using 1:2 with linespoints pt 11 ps 0.5 lc 4 dt 4 title 'dp-scaled-sign-ef', 'accuracy-vs-round.svg.dat' index 4 using 1:2 with linespoints pt 13 ps 0.5 lc 5 dt 5 title 'dp-sign-mean', 'accuracy-vs-round.svg.dat' index 5 using 1:2 with linespoints pt 4 ps 0.5 lc 6 dt 1 title 'dp-allreduce-fp16', 'accuracy-vs-round.svg.dat' index 6 using 1:2 with linespoints pt 6 ps 0.5 lc 7 dt 2 title 'fl-wifi'
