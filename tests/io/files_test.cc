// ReadFileText applies its size limit to every kind of file (issue 15: "`verdict /dev/zero` grows
// to 3 GB and hangs (the size limit is skipped for non-regular files)").
#include "io/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <thread>

#include "cli_runner.h"
#include "support/fake_checkpoint.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

using testing::ErrorOf;
using testing::TempDir;

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

TEST(FilesTest, RegularFileLimitIsCheckedBeforeReading) {
  TempDir dir;
  Write(dir / "f", std::string(1000, 'x'));
  EXPECT_EQ(ReadFileText(dir / "f", 1000).size(), 1000u);  // exactly the limit is allowed
  EXPECT_EQ(ErrorOf([&] { ReadFileText(dir / "f", 999); }),
            dir / "f" + ": cannot read: file is 1000 bytes, more than the limit of 999");
  Write(dir / "empty", "");
  EXPECT_EQ(ReadFileText(dir / "empty", 0), "");
}

TEST(FilesTest, DevZeroStopsAtTheLimit) {
  // /dev/zero is a character device with st_size 0 and no end: the limit is counted while reading.
  EXPECT_EQ(ErrorOf([] { ReadFileText("/dev/zero", 1 << 20); }),
            "/dev/zero: cannot read: more than the limit of 1048576 bytes (not a regular file; read up to the limit)");
  EXPECT_EQ(ReadFileText("/dev/null", 10), "");
}

TEST(FilesTest, FifoIsReadUpToTheLimit) {
  TempDir dir;
  const std::string fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reader gives up first; the writer must then see EPIPE, not die of SIGPIPE.
  auto previous = std::signal(SIGPIPE, SIG_IGN);
  // A writer that sends 3 MiB (more than a pipe buffer) then closes.
  std::thread writer([&] {
    std::ofstream out(fifo, std::ios::binary);
    std::string chunk(1 << 16, 'y');
    for (int i = 0; i < 48 && out; ++i) out << chunk;
  });
  EXPECT_EQ(ErrorOf([&] { ReadFileText(fifo, 1 << 20); }),
            fifo + ": cannot read: more than the limit of 1048576 bytes (not a regular file; read up to the limit)");
  writer.join();  // the reader closed its end: the writer's next write fails and it stops
  // A small message through a FIFO (process substitution, /dev/stdin) is read whole.
  std::thread small([&] {
    std::ofstream out(fifo, std::ios::binary);
    out << "{\"schema\": 1}";
  });
  EXPECT_EQ(ReadFileText(fifo, 1 << 20), "{\"schema\": 1}");
  small.join();
  std::signal(SIGPIPE, previous);
}

TEST(FilesTest, ErrorsNameThePathEscaped) {
  TempDir dir;
  EXPECT_EQ(ErrorOf([&] { ReadFileText(dir.path()); }), dir.path() + ": cannot read: is a directory");
  EXPECT_EQ(ErrorOf([&] { ReadFileText(dir / "missing\nfile\xff"); }),
            dir / "missing\\x0afile\\xff" + ": cannot read: No such file or directory");
}

TEST(FilesTest, VerdictOnDevZeroFailsInsteadOfGrowing) {
  // The command: an error naming the file, exit 1, after reading at most the default limit
  // (256 MiB), instead of growing to gigabytes.
  auto r = testing::RunPpdeploy("verdict /dev/zero /dev/zero");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "ppdeploy: error: /dev/zero: cannot read: more than the limit of 8388608 bytes (not a regular file; read "
            "up to the limit)\n");
}

}  // namespace
}  // namespace ppdeploy
