/* tests/compile_matrix.c - what tests/compile_matrix.sh compiles under
   every setting users have: elec.h and elec_cpu.h, implementation and all,
   as a user's one implementation file includes them.  Every public
   function is compiled (they are external), so the optimiser's warnings
   (-Wpass-failed, -Wmaybe-uninitialized, -Warray-bounds ...) see all of
   the library's code; nothing here is run. */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"

int main(void) {
    return elec_status_string(ELEC_OK)[0] == 'o' ? 0 : 1;
}
