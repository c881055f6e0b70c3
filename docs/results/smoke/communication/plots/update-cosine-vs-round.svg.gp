set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'update-cosine-vs-round.svg'
set title "agreement of client updates\nCommunication: compression with and without error feedback, DP and FL" noenhanced
set xlabel 'round' noenhanced
set ylabel 'mean pairwise cosine of client updates' noenhanced
set grid
set key outside right top noenhanced
plot 'update-cosine-vs-round.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.4 lc 1 dt 1 title 'dp-none', 'update-cosine-vs-round.svg.dat' index 1 using 1:2 with linespoints pt 7 ps 0.4 lc 2 dt 1 title 'dp-topk1', 'update-cosine-vs-round.svg.dat' index 2 using 1:2 with linespoints pt 7 ps 0.4 lc 3 dt 1 title 'dp-topk1-ef', 'update-cosine-vs-round.svg.dat' index 3 using 1:2 with linespoints pt 7 ps 0.4 lc 4 dt 1 title 'dp-scaled-sign-ef', 'update-cosine-vs-round.svg.dat' index 4 using 1:2 with linespoints pt 7 ps 0.4 lc 5 dt 1 title 'dp-sign-mean', 'update-cosine-vs-round.svg.dat' index 5 using 1:2 with linespoints pt 7 ps 0.4 lc 6 dt 1 title 'dp-allreduce-fp16', 'update-cosine-vs-round.svg.dat' index 6 using 1:2 with linespoints pt 7 ps 0.4 lc 7 dt 1 title 'fl-wifi'
