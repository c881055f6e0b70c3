// Near spellings for "did you mean": a few edits, or the start of a longer word; nothing far.
#include "core/spelling.h"

#include <gtest/gtest.h>

namespace fedpar {
namespace {

TEST(Spelling, EditDistanceCountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("krum", "krum"), 0u);
  EXPECT_EQ(edit_distance("krumm", "krum"), 1u);
  EXPECT_EQ(edit_distance("rnu", "run"), 1u);  // a swap of neighbours is one
  EXPECT_EQ(edit_distance("partiton", "partition"), 1u);
  EXPECT_EQ(edit_distance("resnet", "lenet"), 2u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("topK", "topk"), 1u);
}

TEST(Spelling, DidYouMeanNamesTheClosestTwoOrNothing) {
  const std::vector<std::string> models = {"logreg", "linreg", "mlp", "2nn", "cnn", "lenet"};
  EXPECT_EQ(did_you_mean("cnnn", models), "; did you mean 'cnn'?");
  EXPECT_EQ(did_you_mean("resnet", models), "");  // two edits from lenet: too far for six letters
  EXPECT_EQ(did_you_mean("lenett", models), "; did you mean 'lenet'?");
  EXPECT_EQ(did_you_mean("transformer", models), "");
  const std::vector<std::string> schemes = {"iid", "dirichlet-clients", "dirichlet-classes"};
  EXPECT_EQ(did_you_mean("dirichlet", schemes),
            "; did you mean 'dirichlet-classes' or 'dirichlet-clients'?");
  EXPECT_EQ(did_you_mean("di", schemes), "");  // too short for a start, and two from iid
  EXPECT_EQ(did_you_mean("iid-vs-non-iid", {"iid-vs-noniid", "robust"}),
            "; did you mean 'iid-vs-noniid'?");
}

}  // namespace
}  // namespace fedpar
