#include <stdio.h>
#include "sluice.h"
int main(void) { printf("sluice %s\n", SL_VERSION_STRING); return 0; }
