# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
# Writes IN as a NUL-terminated char array NAME (and NAME_len) into OUT, and
# NAME_sha1, its SHA1 in hex (what Redis calls a script for EVALSHA).
file(READ "${IN}" hex HEX)
file(SHA1 "${IN}" sha1)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "/* generated from ${IN} by scripts/embed.cmake */\n"
     "const char ${NAME}[] = {${bytes} 0};\n"
     "const unsigned long ${NAME}_len = sizeof ${NAME} - 1;\n"
     "const char ${NAME}_sha1[] = \"${sha1}\";\n")
