# cmake -DIN=file-or-folder -DOUT=file.c -DNAME=symbol -P embed.cmake
# Writes IN as a NUL-terminated char array NAME (and NAME_len) into OUT, and
# NAME_sha1, its SHA1 in hex (what Redis calls a script for EVALSHA). A
# folder is the concatenation of its *.lua files in name order, kept beside
# OUT as OUT.lua so what Redis runs can be read whole.
if(IS_DIRECTORY "${IN}")
  file(GLOB parts "${IN}/*.lua")
  list(SORT parts)
  set(joined "")
  foreach(part ${parts})
    file(READ "${part}" text)
    string(APPEND joined "${text}")
  endforeach()
  set(source "${OUT}.lua")
  file(WRITE "${source}" "${joined}")
else()
  set(source "${IN}")
endif()
file(READ "${source}" hex HEX)
file(SHA1 "${source}" sha1)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}" "/* generated from ${IN} by scripts/embed.cmake */\n"
     "const char ${NAME}[] = {${bytes} 0};\n"
     "const unsigned long ${NAME}_len = sizeof ${NAME} - 1;\n"
     "const char ${NAME}_sha1[] = \"${sha1}\";\n")
