// The train, eval and sample commands end to end, on a tiny model and a dataset the test writes:
// a run's files, exact resumption through the command, the metrics kept consistent, the refusals
// that protect a run, and samples written as PNG and NPY.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "apps/run_directory.h"
#include "core/backend.h"
#include "core/factory.h"
#include "core/random.h"
#include "data/npy.h"
#include "models/training/training.h"
#include "tests/support/reference.h"

using namespace axiom;
namespace fs = std::filesystem;

namespace {

// A directory with a tiny config (3 x 4 grey images) and 40 random images as a .npy dataset
// (36 for training, the last 4 held out).
struct Workspace {
  fs::path root = fs::temp_directory_path() /
                  ("axiom_commands_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  static inline int counter = 0;

  Workspace() {
    fs::create_directories(root);
    std::ofstream(config())
        << R"({"height": 3, "width": 4, "features": 8, "heads": 2, "upper_layers": 2, "row_layers": 1,
                                 "ff_multiple": 2})";
    Generator gen(5);
    data::write_npy(data(), Tensor(core::randint({40, 3, 4}, 0, 256, gen, Dtype::uint8)));
  }
  ~Workspace() {
    std::error_code ignored;
    fs::remove_all(root, ignored);
  }
  std::string config() const { return (root / "config.json").string(); }
  std::string data() const { return (root / "images.npy").string(); }
  std::string run(const std::string& name) const { return (root / name).string(); }

  apps::TrainCommand train_command(const std::string& name, int64_t steps) const {
    apps::TrainCommand c;
    c.out = run(name), c.config = config(), c.data = data(), c.steps = steps, c.batch_size = 4, c.warmup_steps = 2;
    c.eval_every = 3, c.eval_images = 4, c.checkpoint_every = 2;
    c.given = {"--warmup"};  // as typed (the default warmup is a fifth of --steps at most)
    return c;
  }
};

std::string bytes_of(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

// The steps of metrics.jsonl's training lines, in order.
std::vector<int64_t> trained_steps(const std::string& run) {
  std::vector<int64_t> steps;
  std::ifstream file(run + "/metrics.jsonl");
  for (std::string line; std::getline(file, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("train_bits_per_dim")) steps.push_back(j["step"].get<int64_t>());
  }
  return steps;
}

// The wall_seconds of every line of metrics.jsonl, in order.
std::vector<double> wall_seconds(const std::string& run) {
  std::vector<double> seconds;
  std::ifstream file(run + "/metrics.jsonl");
  for (std::string line; std::getline(file, line);)
    seconds.push_back(nlohmann::json::parse(line).at("wall_seconds").get<double>());
  return seconds;
}

}  // namespace

TEST_CASE("train writes a checkpoint, metrics and a loss curve") {
  Workspace w;
  CHECK(apps::train(w.train_command("run", 6)) == 0);
  for (const char* file :
       {"checkpoint.json", "model-000006.safetensors", "optimizer-000006.safetensors", "metrics.jsonl", "loss.png"}) {
    CAPTURE(file);
    CHECK(fs::is_regular_file(w.run("run") + "/" + file));
  }
  CHECK(trained_steps(w.run("run")) == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("train --profile writes a table's CSV and a Chrome trace of the profiled steps") {
  Workspace w;
  apps::TrainCommand profiled = w.train_command("run", 5);
  profiled.profile = 3;  // steps 2, 3, 4
  REQUIRE(apps::train(profiled) == 0);
  const std::string csv = bytes_of(w.run("run") + "/profile.csv");
  CHECK(csv.rfind("op,kind,pass,calls,seconds,share,bytes,flops\n", 0) == 0);
  CHECK(csv.find("\"layer_norm_linear\",rule,backward,") != std::string::npos);
  const auto trace = nlohmann::json::parse(bytes_of(w.run("run") + "/profile.trace.json"));
  const auto forward_phases = std::count_if(trace["traceEvents"].begin(), trace["traceEvents"].end(),
                                            [](const auto& e) { return e["name"] == "forward"; });
  CHECK(forward_phases == 3);
  // A run stopped before its profile is complete writes what was recorded.
  apps::TrainCommand short_run = w.train_command("short", 2);
  short_run.profile = 5;
  REQUIRE(apps::train(short_run) == 0);
  CHECK(nlohmann::json::parse(bytes_of(w.run("short") + "/profile.trace.json"))["traceEvents"].size() > 0);
  // A second profile replaces the first; a file of that name that axiom did not write is refused before any step.
  apps::TrainCommand again = w.train_command("run", 7);
  again.resume = true, again.profile = 1, again.given.clear();
  REQUIRE(apps::train(again) == 0);
  const auto replaced = nlohmann::json::parse(bytes_of(w.run("run") + "/profile.trace.json"));
  CHECK(std::count_if(replaced["traceEvents"].begin(), replaced["traceEvents"].end(),
                      [](const auto& e) { return e["name"] == "forward"; }) == 1);  // step 7's alone
  std::ofstream(w.run("run") + "/profile.csv") << "my own table";
  again.steps = 9;
  CHECK(test::error_message([&] { apps::train(again); }) ==
        "[train] '" + w.run("run") +
            "/profile.csv' is not a profile axiom wrote; --profile writes there, and axiom "
            "overwrites only its own files (move it away, or choose another --out)");
  CHECK(bytes_of(w.run("run") + "/profile.csv") == "my own table");
  fs::remove(w.run("run") + "/profile.csv");  // a FIFO in its place is refused too, without waiting on it
  REQUIRE(::mkfifo((w.run("run") + "/profile.csv").c_str(), 0600) == 0);
  CHECK(test::error_message([&] { apps::train(again); }).find("profile.csv' is not a profile axiom wrote") !=
        std::string::npos);
  CHECK(models::read_checkpoint(w.run("run")).step == 7);
}

TEST_CASE("the default warmup fits a short decaying run, and a --warmup given that does not fit is an Error") {
  Workspace w;
  apps::TrainCommand short_run = w.train_command("run", 10);
  short_run.schedule = "linear", short_run.warmup_steps = 100, short_run.given.clear();  // 100: classify's default
  REQUIRE(apps::train(short_run) == 0);
  CHECK(models::read_checkpoint(w.run("run")).options.warmup_steps == 2);  // a fifth of 10
  apps::TrainCommand typed = w.train_command("typed", 10);
  typed.schedule = "linear", typed.warmup_steps = 100;
  CHECK(test::error_message([&] { apps::train(typed); }) ==
        "[train] a linear schedule decays after the warmup: steps (10) must be greater than warmup_steps (100)");
}

TEST_CASE("train --patience stops a run that stalls, keeps the best checkpoint, and a resume says so") {
  Workspace w;
  apps::TrainCommand stalled = w.train_command("run", 30);
  stalled.lr = 1e-12, stalled.warmup_steps = 0;  // the held-out loss cannot move by 0.01
  stalled.patience = 2, stalled.min_delta = 0.01;
  REQUIRE(apps::train(stalled) == 0);
  CHECK(trained_steps(w.run("run")).back() == 9);  // evaluations at 3 (the best), 6 and 9: two without improvement
  CHECK(models::read_checkpoint(w.run("run") + "/best").step == 3);
  CHECK(models::read_checkpoint(w.run("run")).step == 9);
  apps::TrainCommand again = w.train_command("run", 30);
  again.resume = true, again.given.clear();  // the run's own settings
  REQUIRE(apps::train(again) == 0);          // says it stopped early; trains no further
  CHECK(trained_steps(w.run("run")).back() == 9);
  apps::TrainCommand other = w.train_command("run", 30);
  other.resume = true, other.patience = 5, other.given = {"--patience"};
  CHECK(test::error_message([&] { apps::train(other); }) ==
        "[train] --patience 5 differs from the run's 2; a resumed run keeps its settings (or use a new --out)");
}

TEST_CASE("train --patience refuses a best/ that is not a checkpoint, and --min-delta alone") {
  Workspace w;
  fs::create_directories(w.run("run") + "/best");
  std::ofstream(w.run("run") + "/best/notes.txt") << "mine";
  apps::TrainCommand c = w.train_command("run", 6);
  c.patience = 2, c.force = true;
  CHECK(test::error_message([&] { apps::train(c); }).find("holds 'best', a name that a run writes") !=
        std::string::npos);
  CHECK(bytes_of(w.run("run") + "/best/notes.txt") == "mine");
  apps::TrainCommand alone = w.train_command("other", 6);
  alone.min_delta = 0.1;
  CHECK(test::error_message([&] { apps::train(alone); }) ==
        "[train] --min-delta 0.1 says what an improvement is for --patience, which is not given");
}

TEST_CASE("lr-find writes its curve into a new directory, suggests a rate, and refuses a directory in use") {
  Workspace w;
  apps::LrFindCommand c;
  c.out = w.run("lr"), c.config = w.config(), c.data = w.data(), c.batch_size = 4, c.steps = 10;
  REQUIRE(apps::lr_find(c) == 0);
  const std::string csv = bytes_of(w.run("lr") + "/lr_find.csv");
  CHECK(csv.rfind("step,lr,loss,smoothed\n0,1e-06,", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 11);
  CHECK(fs::file_size(w.run("lr") + "/lr_find.png") > 1000);
  CHECK(!fs::exists(w.run("lr") + "/checkpoint.json"));  // no run
  CHECK(test::error_message([&] { apps::lr_find(c); }) ==
        "[lr-find] --out '" + w.run("lr") + "' is not a new or empty directory; axiom writes only where nothing is");
  apps::LrFindCommand upside_down = c;
  upside_down.out = w.run("other"), upside_down.start = 1, upside_down.end = 1e-3;
  CHECK(test::error_message([&] { apps::lr_find(upside_down); }).find("0 < start < end") != std::string::npos);
  CHECK(!fs::exists(w.run("other")));  // refused before anything is written
}

TEST_CASE("train --resume continues exactly: 3 + 3 steps give the files of 6 steps") {
  Workspace w;
  REQUIRE(apps::train(w.train_command("straight", 6)) == 0);
  REQUIRE(apps::train(w.train_command("halves", 3)) == 0);
  apps::TrainCommand resume = w.train_command("halves", 6);
  resume.resume = true;
  REQUIRE(apps::train(resume) == 0);
  CHECK(bytes_of(w.run("halves") + "/model-000006.safetensors") ==
        bytes_of(w.run("straight") + "/model-000006.safetensors"));
  CHECK(bytes_of(w.run("halves") + "/optimizer-000006.safetensors") ==
        bytes_of(w.run("straight") + "/optimizer-000006.safetensors"));
  CHECK(trained_steps(w.run("halves")) == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
  // The run's clock goes on across the two invocations: every line's wall_seconds is at least the one before.
  const std::vector<double> seconds = wall_seconds(w.run("halves"));
  CHECK(seconds.size() == 8);  // 6 steps, held-out evaluations after steps 3 and 6
  CHECK(std::is_sorted(seconds.begin(), seconds.end()));
  CHECK(seconds.front() > 0);
}

TEST_CASE(
    "train: a run whose rate decays has a length: a second invocation finds it done, a different --steps is refused") {
  Workspace w;
  apps::TrainCommand linear = w.train_command("run", 5);
  linear.schedule = "linear";
  REQUIRE(apps::train(linear) == 0);
  const auto training = nlohmann::json::parse(bytes_of(w.run("run") + "/checkpoint.json"))["training"];
  CHECK((training["schedule"] == "linear" && training["steps"] == 5));
  std::ifstream metrics(w.run("run") + "/metrics.jsonl");
  std::vector<double> rates;
  for (std::string line; std::getline(metrics, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("lr")) rates.push_back(j["lr"].get<double>());
  }
  const std::vector<double> expected{0, 0.0005, 0.001, 0.001 * 2 / 3,
                                     0.001 / 3};  // 2 warmup steps, then down to 0 at step 5
  REQUIRE(rates.size() == expected.size());
  for (size_t i = 0; i < rates.size(); ++i) CHECK(rates[i] == doctest::Approx(expected[i]).epsilon(1e-12));

  apps::TrainCommand again = w.train_command("run", 5);
  again.resume = true, again.given.erase("--steps"), again.steps = 500;  // no --steps: the run's own length
  CHECK(apps::train(again) == 0);
  CHECK(trained_steps(w.run("run")).size() == 5);
  apps::TrainCommand longer = w.train_command("run", 8);
  longer.resume = true, longer.given.insert("--steps");
  CHECK(test::error_message([&] { apps::train(longer); }) ==
        "[train] --steps 8 differs from the run's 5, where its linear schedule ends; a resumed run keeps its settings "
        "(or use a new --out)");
  apps::TrainCommand other = w.train_command("run", 5);
  other.resume = true, other.schedule = "cosine", other.given.insert("--schedule");
  CHECK(test::error_message([&] { apps::train(other); }).find("--schedule cosine differs from the run's linear") !=
        std::string::npos);
}

TEST_CASE("train refuses to overwrite a run, and a resumed run keeps its settings") {
  Workspace w;
  REQUIRE(apps::train(w.train_command("run", 2)) == 0);
  const std::string again = test::error_message([&] { apps::train(w.train_command("run", 4)); });
  CHECK(again == "[train] '" + w.run("run") +
                     "' already holds a run (step 2); continue it with --resume, or choose another --out");
  apps::TrainCommand other_lr = w.train_command("run", 4);
  other_lr.resume = true, other_lr.lr = 0.5, other_lr.given.insert("--lr");
  CHECK(test::error_message([&] { apps::train(other_lr); }).find("--lr 0.5 differs from the run's 0.001;") !=
        std::string::npos);
  apps::TrainCommand other_seed = w.train_command("run", 4);
  other_seed.resume = true, other_seed.seed = 7, other_seed.given.insert("--seed");
  CHECK(test::error_message([&] { apps::train(other_seed); }).find("--seed 7 differs from the run's 0;") !=
        std::string::npos);
  apps::TrainCommand no_steps = w.train_command("other", 0);
  CHECK(test::error_message([&] { apps::train(no_steps); }) == "[train] --steps must be positive, got 0");
}

TEST_CASE("train --resume compares values, not six decimals: --lr 1e-7 differs from a run's 4e-7") {
  Workspace w;
  apps::TrainCommand tiny_lr = w.train_command("run", 1);
  tiny_lr.lr = 4e-7;
  REQUIRE(apps::train(tiny_lr) == 0);
  apps::TrainCommand other = w.train_command("run", 2);
  other.resume = true, other.lr = 1e-7, other.given.insert("--lr");
  CHECK(test::error_message([&] { apps::train(other); }) ==
        "[train] --lr 1e-07 differs from the run's 4e-07; a resumed run keeps its settings (or use a new --out)");
  apps::TrainCommand same = w.train_command("run", 2);
  same.resume = true, same.lr = 4e-7, same.given.insert("--lr");
  CHECK(apps::train(same) == 0);
}

TEST_CASE("train never deletes or overwrites a file it did not write") {
  Workspace w;
  const std::string dir = w.run("kept");
  fs::create_directories(dir);
  std::ofstream(dir + "/model-best.safetensors") << "the user's best weights";
  std::ofstream(dir + "/notes.txt") << "the user's notes";

  // A non-empty directory that is not a run: refused, with or without --resume.
  apps::TrainCommand start = w.train_command("kept", 6);
  test::check_error([&] { apps::train(start); },
                    {"'" + dir + "' is not empty and holds no axiom run (no checkpoint.json)", "--force"});
  start.resume = true;
  test::check_error([&] { apps::train(start); }, {"is not empty and holds no axiom run"});

  // --force: the run starts beside the user's files, and its checkpoints remove only their own.
  start.resume = false, start.force = true;
  REQUIRE(apps::train(start) == 0);
  CHECK(bytes_of(dir + "/model-best.safetensors") == "the user's best weights");
  CHECK(bytes_of(dir + "/notes.txt") == "the user's notes");
  CHECK(fs::is_regular_file(dir + "/model-000006.safetensors"));
  CHECK(!fs::exists(dir + "/model-000004.safetensors"));  // the run's own older checkpoint is gone

  // A file named like a checkpoint that no checkpoint.json recorded is not the run's: it stays.
  std::ofstream(dir + "/model-000002.safetensors") << "not written by axiom";
  apps::TrainCommand more = w.train_command("kept", 8);
  more.resume = true;
  REQUIRE(apps::train(more) == 0);
  CHECK(bytes_of(dir + "/model-000002.safetensors") == "not written by axiom");
  CHECK(!fs::exists(dir + "/model-000006.safetensors"));

  // --force never overwrites a file with a name a run writes.
  const std::string other = w.run("weights_without_a_run");
  fs::create_directories(other);
  std::ofstream(other + "/model-000004.safetensors") << "old weights whose checkpoint.json was lost";
  apps::TrainCommand forced = w.train_command("weights_without_a_run", 2);
  forced.force = true, forced.resume = true;
  test::check_error([&] { apps::train(forced); }, {"holds 'model-000004.safetensors', a name that a run writes"});
  CHECK(bytes_of(other + "/model-000004.safetensors") == "old weights whose checkpoint.json was lost");
}

TEST_CASE(
    "one training at a time in a run's directory, and a resumed run drops stale temporary files and a torn metrics "
    "line") {
  Workspace w;
  REQUIRE(apps::train(w.train_command("run", 2)) == 0);
  const std::string dir = w.run("run");
  CHECK(fs::is_regular_file(dir + "/train.lock"));
  apps::TrainCommand resume = w.train_command("run", 4);
  resume.resume = true;
  {
    const apps::RunLock other(dir);  // as another `axiom train` on the same --out would hold it
    test::check_error([&] { apps::train(resume); }, {"[train] another axiom train (process " +
                                                     std::to_string(::getpid()) + ") is training in '" + dir + "'"});
  }
  // What a kill -9 in the middle of writes leaves: temporary files, and half a line of metrics.
  for (const char* name :
       {"model-000004.safetensors.tmp-4242-0", "checkpoint.json.tmp-4242-3", "loss.png.tmp-4242.png"}) {
    std::ofstream(dir + "/" + name) << "half a file";
  }
  std::ofstream(dir + "/notes.txt.tmp-4242-0") << "the user's";  // not a name a run writes: kept
  std::ofstream(dir + "/metrics.jsonl", std::ios::app) << R"({"step": 3, "train_bits_per_d)";
  REQUIRE(apps::train(resume) == 0);
  for (const char* name :
       {"model-000004.safetensors.tmp-4242-0", "checkpoint.json.tmp-4242-3", "loss.png.tmp-4242.png"}) {
    CHECK(!fs::exists(dir + "/" + name));
  }
  CHECK(bytes_of(dir + "/notes.txt.tmp-4242-0") == "the user's");
  CHECK(trained_steps(dir) == std::vector<int64_t>{1, 2, 3, 4});  // every line parses (trained_steps would throw)

  // A directory that holds only what a first attempt killed during its first checkpoint left (the
  // lock file, the record of the files being written, one of them) takes a new run.
  const std::string fresh = w.run("fresh");
  { const apps::RunLock attempt(fresh); }
  std::ofstream(fresh + "/checkpoint.pending.json")
      << R"({"files": ["model-000000.safetensors", "optimizer-000000.safetensors"]})";
  std::ofstream(fresh + "/model-000000.safetensors") << "half written";
  CHECK(apps::train(w.train_command("fresh", 2)) == 0);
  CHECK(!fs::exists(fresh + "/checkpoint.pending.json"));
  CHECK(trained_steps(fresh) == std::vector<int64_t>{1, 2});
  // Without the record the same file is not known to be axiom's: the directory is refused.
  const std::string unknown = w.run("unknown");
  fs::create_directories(unknown);
  std::ofstream(unknown + "/model-000000.safetensors") << "someone's";
  test::check_error([&] { apps::train(w.train_command("unknown", 2)); }, {"is not empty and holds no axiom run"});
  CHECK(bytes_of(unknown + "/model-000000.safetensors") == "someone's");
}

TEST_CASE("a run's file names holding something axiom did not write there: an Error, never a hang or an overwrite") {
  Workspace w;
  // A user's file named like the lock, or the record of an unfinished checkpoint without the lock
  // every attempt takes first: not axiom's, so refused, and left as they were.
  const std::string lock_only = w.run("lock_only");
  fs::create_directories(lock_only);
  std::ofstream(lock_only + "/train.lock") << "my lock, not axiom's";
  test::check_error([&] { apps::train(w.train_command("lock_only", 2)); }, {"train.lock' is not axiom's lock file"});
  CHECK(bytes_of(lock_only + "/train.lock") == "my lock, not axiom's");
  const std::string forged = w.run("forged");
  fs::create_directories(forged);
  std::ofstream(forged + "/checkpoint.pending.json") << R"({"files": ["model-000001.safetensors"]})";
  std::ofstream(forged + "/model-000001.safetensors") << "someone's";
  test::check_error([&] { apps::train(w.train_command("forged", 2)); }, {"is not empty and holds no axiom run"});
  CHECK(bytes_of(forged + "/model-000001.safetensors") == "someone's");
  const std::string linked = w.run("linked");
  fs::create_directories(linked);
  fs::create_symlink(w.config(), linked + "/train.lock");  // the lock is never written through a link
  test::check_error([&] { apps::train(w.train_command("linked", 2)); }, {"cannot open the lock file"});

  // In a run: a FIFO (reading it would wait forever) or a directory where a file should be.
  REQUIRE(apps::train(w.train_command("run", 2)) == 0);
  const std::string dir = w.run("run");
  apps::TrainCommand resume = w.train_command("run", 4);
  resume.resume = true;
  fs::rename(dir + "/metrics.jsonl", dir + "/metrics.jsonl.saved");
  REQUIRE(::mkfifo((dir + "/metrics.jsonl").c_str(), 0644) == 0);
  test::check_error([&] { apps::train(resume); }, {"metrics.jsonl' is not a regular file"});
  fs::remove(dir + "/metrics.jsonl");
  fs::rename(dir + "/metrics.jsonl.saved", dir + "/metrics.jsonl");
  fs::rename(dir + "/checkpoint.json", dir + "/checkpoint.json.saved");
  REQUIRE(::mkfifo((dir + "/checkpoint.json").c_str(), 0644) == 0);
  test::check_error([&] { apps::train(resume); }, {"[checkpoint] '" + dir + "/checkpoint.json' is not a regular file"});
  fs::remove(dir + "/checkpoint.json");
  fs::create_directory(dir + "/checkpoint.json");
  test::check_error([&] { apps::train(resume); }, {"checkpoint.json' is not a regular file"});
  fs::remove(dir + "/checkpoint.json");
  fs::rename(dir + "/checkpoint.json.saved", dir + "/checkpoint.json");
  CHECK(apps::train(resume) == 0);

  // A FIFO as the record of an unfinished first checkpoint (beside the attempt's lock) is not read.
  const std::string fresh = w.run("fresh");
  { const apps::RunLock attempt(fresh); }
  REQUIRE(::mkfifo((fresh + "/checkpoint.pending.json").c_str(), 0644) == 0);
  CHECK(apps::train(w.train_command("fresh", 2)) == 0);
}

TEST_CASE("--device names a usable device or is an error before anything runs") {
  CHECK(apps::device_of("train", "cpu") == Device::cpu());
  CHECK(test::error_message([] { apps::device_of("train", "gpu"); }) ==
        "[device] unknown device 'gpu' (cpu, cuda, cuda:N or meta)");
  if (core::backend(Device::cuda()).available()) {
    CHECK(apps::device_of("sample", "cuda") == Device::cuda());
  } else {
    test::check_error([] { apps::device_of("sample", "cuda"); }, {"[sample] --device cuda cannot run here: "});
    Workspace w;
    apps::TrainCommand on_gpu = w.train_command("gpu", 1);
    on_gpu.device = "cuda";
    test::check_error([&] { apps::train(on_gpu); }, {"[train] --device cuda cannot run here"});
  }
}

TEST_CASE("sample writes a PNG grid and an NPY file only when --values names one, and fast and naive agree") {
  Workspace w;
  REQUIRE(apps::train(w.train_command("run", 2)) == 0);
  // a file of the user's beside the grid: sample writes only what it is named
  apps::SampleCommand plain;
  plain.checkpoint = w.run("run"), plain.count = 3, plain.out = w.run("plain.png"), plain.zoom = 2;
  std::ofstream(w.run("plain.npy")) << "my data";
  REQUIRE(apps::sample(plain) == 0);
  CHECK(bytes_of(w.run("plain.npy")) == "my data");

  apps::SampleCommand fast = plain;
  fast.out = w.run("fast.png"), fast.values = w.run("fast.npy");
  REQUIRE(apps::sample(fast) == 0);
  apps::SampleCommand naive = fast;
  naive.method = "naive", naive.out = w.run("naive.png"), naive.values = w.run("naive.npy");
  REQUIRE(apps::sample(naive) == 0);
  CHECK(bytes_of(w.run("plain.png")) == bytes_of(w.run("fast.png")));
  const Tensor values = data::read_npy(w.run("fast.npy"));
  CHECK(values.shape() == core::Shape{3, 3, 4});
  CHECK(values.dtype() == Dtype::uint8);
  CHECK(values.to_vector<double>() == data::read_npy(w.run("naive.npy")).to_vector<double>());
  CHECK(bytes_of(w.run("fast.png")) == bytes_of(w.run("naive.png")));
  CHECK(bytes_of(w.run("fast.png")).substr(1, 3) == "PNG");

  apps::SampleCommand nowhere = fast;
  nowhere.out = w.run("no/such/dir/grid.png");
  CHECK(test::error_message([&] {
          apps::sample(nowhere);
        }).find("the directory '" + w.run("no/such/dir") + "' does not exist") != std::string::npos);
  apps::SampleCommand not_npy = fast;
  not_npy.values = w.run("values.png");
  CHECK(test::error_message([&] { apps::sample(not_npy); }).find("--values must name a .npy file") !=
        std::string::npos);
}

// The raster models go through the same commands: their config keys survive the checkpoint, and
// the run resumes, evaluates and samples (fast == naive) like the Axial Transformer's.
TEST_CASE("a raster model (local 2-D attention) trains, resumes, evaluates and samples through the commands") {
  Workspace w;
  std::ofstream(w.config())
      << R"({"height": 3, "width": 4, "features": 8, "heads": 2, "upper_layers": 0, "row_layers": 2,
                                   "ff_multiple": 2, "attention": "local2d", "local_rows": 2, "local_columns": 3})";
  REQUIRE(apps::train(w.train_command("run", 2)) == 0);
  apps::TrainCommand more = w.train_command("run", 4);
  more.resume = true;
  REQUIRE(apps::train(more) == 0);
  const nlohmann::json saved = nlohmann::json::parse(bytes_of(w.run("run") + "/checkpoint.json"));
  CHECK(saved.dump().find(R"("attention":"local2d")") != std::string::npos);
  CHECK(saved.dump().find(R"("local_columns":3)") != std::string::npos);
  apps::EvalCommand eval;
  eval.checkpoint = w.run("run");
  CHECK(apps::evaluate(eval) == 0);
  apps::SampleCommand fast;
  fast.checkpoint = w.run("run"), fast.count = 2, fast.out = w.run("fast.png"), fast.values = w.run("fast.npy");
  REQUIRE(apps::sample(fast) == 0);
  apps::SampleCommand naive = fast;
  naive.method = "naive", naive.out = w.run("naive.png"), naive.values = w.run("naive.npy");
  REQUIRE(apps::sample(naive) == 0);
  CHECK(data::read_npy(w.run("fast.npy")).to_vector<double>() ==
        data::read_npy(w.run("naive.npy")).to_vector<double>());
}

TEST_CASE("eval reads a run and its data, and bad checkpoints are named") {
  Workspace w;
  REQUIRE(apps::train(w.train_command("run", 2)) == 0);
  apps::EvalCommand eval;
  eval.checkpoint = w.run("run");
  CHECK(apps::evaluate(eval) == 0);
  eval.checkpoint = w.run("missing");
  CHECK(test::error_message([&] { apps::evaluate(eval); }) ==
        "[checkpoint] '" + w.run("missing") +
            "' is neither a checkpoint directory nor a file (No such file or directory)");
}
