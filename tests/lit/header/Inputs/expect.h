// The check of the header tests' programs: prints the failed condition and its line, and
// returns 1 from main. A macro, for the condition's text and line.
#pragma once

#include <cstdio>

#define EXPECT(c)                                                                                  \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      std::printf("failed: %s (line %d)\n", #c, __LINE__);                                         \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
