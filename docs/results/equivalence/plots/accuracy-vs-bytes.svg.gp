set terminal svg size 800,500 dynamic enhanced font 'sans,12' background rgb 'white'
set output 'accuracy-vs-bytes.svg'
set title "test accuracy per MB communicated (mean over seeds; band: min to max)\nGradient averaging vs centralized SGD" noenhanced
set xlabel 'MB sent + received at the server, and between workers (cumulative)' noenhanced
set ylabel 'test accuracy (%)' noenhanced
set grid
set key outside right top noenhanced
plot 'accuracy-vs-bytes.svg.dat' index 0 using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc 1 notitle, 'accuracy-vs-bytes.svg.dat' index 0 using 1:2 with linespoints pt 7 ps 0.4 lc 1 dt 1 title 'centralized-B100', 'accuracy-vs-bytes.svg.dat' index 1 using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc 2 notitle, 'accuracy-vs-bytes.svg.dat' index 1 using 1:2 with linespoints pt 7 ps 0.4 lc 2 dt 1 title 'gradient-iid-4x25', 'accuracy-vs-bytes.svg.dat' index 2 using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc 3 notitle, 'accuracy-vs-bytes.svg.dat' index 2 using 1:2 with linespoints pt 7 ps 0.4 lc 3 dt 1 title 'gradient-shards-4x25'
