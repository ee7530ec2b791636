A=(--x "1 2")
if [ "$B" = 1 ]; then A+=(--y); fi
python p.py "${A[@]}" ${C:-3}
