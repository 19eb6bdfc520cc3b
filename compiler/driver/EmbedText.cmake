# Turns a text file into a C++ function returning its bytes, so that the compiler carries
# runtime/include/tilec/runtime.h without a hand-made copy.
# Usage: cmake -DINPUT=file -DOUTPUT=file.cpp -DNAMESPACE=ns -DFUNCTION=name -P EmbedText.cmake
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
# CMake regexes have no {n}: spell out 16 bytes a line.
string(REPEAT "[0-9a-f][0-9a-f]" 16 line_pattern)
string(REGEX REPLACE "(${line_pattern})" "\\1\n" hex "${hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by EmbedText.cmake. Do not edit.\n"
  "#include <string_view>\n\n"
  "namespace ${NAMESPACE} {\n"
  "namespace {\nconstexpr unsigned char kBytes[${size} + 1] = {\n${bytes}0};\n} // namespace\n"
  "std::string_view ${FUNCTION}() {\n"
  "  return {reinterpret_cast<const char *>(kBytes), ${size}};\n}\n"
  "} // namespace ${NAMESPACE}\n")
# Only touch the output when it changed, so that dependents are not rebuilt needlessly.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
