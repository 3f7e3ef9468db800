# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
# Writes IN as a NUL-terminated char array NAME (and NAME_len) into OUT.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "/* generated from ${IN} by scripts/embed.cmake */\n"
     "const char ${NAME}[] = {${bytes} 0};\n"
     "const unsigned long ${NAME}_len = sizeof ${NAME} - 1;\n")
