// safetensors: round trip, the byte layout other tools expect, and corrupt files.
#include "core/safetensors.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/backend.h"
#include "core/check.h"
#include "core/model.h"
#include "tests/util/test_util.h"

namespace fedpar {
namespace {

TEST(Safetensors, RoundTripIsBitExact) {
  testing::TempDir d;
  auto be = make_backend("cpu");
  Model m(*be, {"cnn"}, {28, 28, 1}, 10);
  m.init(9);
  const auto p = m.params_host();
  save_safetensors(d / "m.safetensors", m.layout(), p, {{"model", "cnn"}});
  EXPECT_FALSE(std::filesystem::exists(d / "m.safetensors.tmp"));
  const auto back = load_params(d / "m.safetensors", m.layout());
  EXPECT_EQ(std::memcmp(back.data(), p.data(), p.size() * sizeof(float)), 0);
  const TensorFile f = load_safetensors(d / "m.safetensors");
  EXPECT_EQ(f.metadata.at("model"), "cnn");
  EXPECT_EQ(f.tensors.at("conv2.weight").shape, (std::vector<int64_t>{64, 5, 5, 32}));
}

TEST(Safetensors, ByteLayoutFollowsTheFormat) {
  testing::TempDir d;
  ParamLayout layout;
  layout.add("w", {2, 3});
  layout.add("b", {2});
  const std::vector<float> p = {1, 2, 3, 4, 5, 6, 7, 8};
  save_safetensors(d / "x.safetensors", layout, p);
  std::ifstream in(d / "x.safetensors", std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
  std::string header(n, '\0');
  in.read(header.data(), std::streamsize(n));
  const auto j = nlohmann::json::parse(header);
  EXPECT_EQ(j["w"]["dtype"], "F32");
  EXPECT_EQ(j["w"]["shape"], nlohmann::json::array({2, 3}));
  EXPECT_EQ(j["w"]["data_offsets"], nlohmann::json::array({0, 24}));
  EXPECT_EQ(j["b"]["data_offsets"], nlohmann::json::array({24, 32}));
  std::vector<float> data(8);
  in.read(reinterpret_cast<char*>(data.data()), 32);
  EXPECT_EQ(data, p);
  EXPECT_EQ(std::filesystem::file_size(d / "x.safetensors"), 8 + n + 32);
}

TEST(Safetensors, CorruptOrMismatchedFilesAreErrors) {
  testing::TempDir d;
  ParamLayout layout;
  layout.add("w", {4});
  save_safetensors(d / "ok.safetensors", layout, std::vector<float>{1, 2, 3, 4});
  ParamLayout other;
  other.add("w", {2, 2});
  EXPECT_THROW(load_params(d / "ok.safetensors", other), Error);
  ParamLayout renamed;
  renamed.add("v", {4});
  EXPECT_THROW(load_params(d / "ok.safetensors", renamed), Error);
  // a file of a larger model whose first tensors fit is not taken in part
  ParamLayout larger = layout;
  larger.add("extra", {3});
  save_safetensors(d / "larger.safetensors", larger, std::vector<float>{1, 2, 3, 4, 5, 6, 7});
  try {
    load_params(d / "larger.safetensors", layout);
    ADD_FAILURE() << "a file with a tensor the model lacks was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds tensor(s) the model does not have: extra"),
              std::string::npos)
        << e.what();
  }

  std::filesystem::resize_file(d / "ok.safetensors",
                               std::filesystem::file_size(d / "ok.safetensors") - 4);
  EXPECT_THROW(load_safetensors(d / "ok.safetensors"), Error);  // data shorter than offsets
  {
    std::ofstream(d / "junk.safetensors", std::ios::binary) << "\xff\xff\xff\xff\xff\xff\xff\x7fxx";
  }
  EXPECT_THROW(load_safetensors(d / "junk.safetensors"), Error);
  {
    std::ofstream out(d / "badjson.safetensors", std::ios::binary);
    const uint64_t n = 8;
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << "{\"w\":[1]";
  }
  EXPECT_THROW(load_safetensors(d / "badjson.safetensors"), Error);
  EXPECT_THROW(load_safetensors(d / "absent.safetensors"), Error);
}

// nlohmann casts a float to an integer, undefined out of range (the fuzzer found 4.6e20 as a
// dimension): every size and offset must be a JSON integer in range, or the file is refused.
TEST(Safetensors, SizesThatAreNotIntegersInRangeAreErrors) {
  testing::TempDir d;
  auto file = [&](const std::string& shape, const std::string& offsets) {
    const std::string header =
        R"({"w":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}}";
    const auto path = d / "f.safetensors";
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << std::string(16, '\x01');
    return path;
  };
  EXPECT_EQ(load_safetensors(file("[4]", "[0,16]")).tensors.at("w").values.size(), 4u);
  for (const auto& [shape, offsets, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"[4.61169e+20]", "[0,16]", "a dimension must be an integer in range, got 4.61"},
           {"[4.0]", "[0,16]", "a dimension must be an integer in range, got 4.0"},
           {"[4]", "[0,16.5]", "data_offsets must be an integer in range, got 16.5"},
           {"[4]", "[-1,16]", "data_offsets must be an integer in range, got -1"},
           {"[4]", "[0,1e30]", "data_offsets must be an integer in range"},
           {"[99999999999999999999]", "[0,16]", "a dimension must be an integer in range"}}) {
    try {
      load_safetensors(file(shape, offsets));
      ADD_FAILURE() << shape << " " << offsets << " was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("tensor 'w': " + says), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace fedpar
