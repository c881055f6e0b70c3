// A wrong-way include the layer check must reject (tests/CMakeLists.txt).
#include "server/strategy.h"
