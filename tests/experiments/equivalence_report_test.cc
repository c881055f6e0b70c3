// What the equivalence report's prose concludes from a table of distances, on tables made up to
// show one situation each.
#include <gtest/gtest.h>

#include "experiments/equivalence.h"

namespace fedpar {
namespace {

// A 2NN whose centralized run (a) alone rounded its way 1.7e-05 from float64 while its
// reorderings, (b) and (c) ended 1.4e-07 from it (measured once with 2,000 samples and 30
// rounds): every distance from (a) is (a)'s, and the prose says so instead of leaving (b), (c)
// looking guilty.
EquivalenceCase strays(double a_exact) {
  EquivalenceCase c{.model = "2nn", .title = "2nn"};
  c.has_exact = true;
  c.a_exact = a_exact;
  c.float32_exact = 1.4e-07;
  c.floor = c.floor_min = c.floor_max = 1.7e-05;
  c.bc_worst = 1.7e-05;
  c.bc_exact_ratio = 1.0;
  c.bc_claim_holds = true;
  c.de_orders_further = 3;
  c.rows = {{.id = "a'", .relative = 1.7e-05, .exact = 1.36e-07},
            {.id = "b", .relative = 1.7e-05, .exact = 1.36e-07},
            {.id = "c", .relative = 1.7e-05, .exact = 1.37e-07},
            {.id = "d", .relative = 0.1, .exact = 0.1},
            {.id = "e", .relative = 0.1, .exact = 0.1}};
  return c;
}

TEST(EquivalenceMeaning, WhenTheCentralizedRunStraysItIsNamed) {
  EquivalenceResult r;
  r.cases = {strays(1.71e-05)};
  const std::string m = equivalence_meaning(r);
  EXPECT_NE(m.find("(b), (c) are not below 1e-5 relative (1.7e-05), and neither is rounding "
                   "alone, the floor (1.7e-05); it is (a) that strays: it ended 1.7e-05 from "
                   "exact (float64) arithmetic, where its reorderings ended 1.4e-07 (median), "
                   "(b) 1.4e-07 and (c) 1.4e-07"),
            std::string::npos)
      << m;
  // (a) as near exact arithmetic as the rest: nothing strays
  r.cases = {strays(1.4e-07)};
  EXPECT_EQ(equivalence_meaning(r).find("strays"), std::string::npos);
}

}  // namespace
}  // namespace fedpar
