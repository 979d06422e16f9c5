// The one file writer (io/output_file.h, io/jsonl.h; issue 24: "`calibrate --out /dev/full` replaced the
// device with a 619-byte JSON file"; "Write errors are ignored"). Expected behaviour from the rules that
// SQLite and git follow (temporary file beside the target, fsync, rename, every write checked, never
// replace what they did not create), as docs/safety.md "Writes and reads" states them.
#include "io/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/files.h"
#include "io/jsonl.h"
#include "support/fake_checkpoint.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

using testing::ErrorOf;
using testing::TempDir;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode;
}

/// Names in `dir` (a leftover temporary file would show here).
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OutputFileTest, ReplacesARegularFileAndKeepsItsMode) {
  TempDir dir;
  const std::string path = dir / "out.json";
  WriteOutputFile(path, "old\n");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  WriteOutputFile(path, "new\n");
  EXPECT_EQ(Slurp(path), "new\n");
  EXPECT_EQ(ModeOf(path) & 07777, 0640u);
  EXPECT_EQ(Names(dir.path()), std::vector<std::string>{"out.json"});  // no temporary file left
}

TEST(OutputFileTest, WritesThroughALinkToARegularFile) {
  TempDir dir;
  WriteOutputFile(dir / "real", "old");
  ASSERT_EQ(::symlink((dir / "real").c_str(), (dir / "link").c_str()), 0);
  WriteOutputFile(dir / "link", "new");
  EXPECT_TRUE(S_ISLNK(ModeOf(dir / "link")));  // the link stays a link
  EXPECT_EQ(Slurp(dir / "real"), "new");
}

TEST(OutputFileTest, RefusesEveryTargetThatIsNotARegularFileUntouched) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  ASSERT_EQ(::mkdir((dir / "dir").c_str(), 0700), 0);
  ASSERT_EQ(::symlink("/dev/null", (dir / "null").c_str()), 0);  // a character device, reached by a link
  ASSERT_EQ(::symlink((dir / "missing").c_str(), (dir / "dangling").c_str()), 0);
  const std::string tail = "; ppdeploy writes only regular files (or - for stdout); it was not touched";
  EXPECT_EQ(ErrorOf([&] { WriteOutputFile(dir / "fifo", "x"); }), dir / "fifo" + ": refused: it is a FIFO" + tail);
  EXPECT_EQ(ErrorOf([&] { WriteOutputFile(dir / "dir", "x"); }), dir / "dir" + ": refused: it is a directory" + tail);
  EXPECT_EQ(ErrorOf([&] { WriteOutputFile(dir / "null", "x"); }),
            dir / "null" + ": refused: it is a symbolic link to a character device" + tail);
  EXPECT_EQ(ErrorOf([&] { WriteOutputFile(dir / "dangling", "x"); }),
            dir / "dangling" + ": refused: it is a symbolic link to a missing file" + tail);
  EXPECT_EQ(ErrorOf([&] { CheckOutputTarget(dir / "fifo"); }), dir / "fifo" + ": refused: it is a FIFO" + tail);
  EXPECT_TRUE(S_ISFIFO(ModeOf(dir / "fifo")));
  EXPECT_TRUE(S_ISDIR(ModeOf(dir / "dir")));
  EXPECT_TRUE(S_ISLNK(ModeOf(dir / "null")));
  EXPECT_TRUE(std::filesystem::is_empty(dir / "dir"));
  EXPECT_EQ(Names(dir.path()), (std::vector<std::string>{"dangling", "dir", "fifo", "null"}));
  EXPECT_NO_THROW(CheckOutputTarget(dir / "new-file"));
  EXPECT_NO_THROW(CheckOutputTarget("-"));
}

TEST(OutputFileTest, ACharacterDeviceIsRefusedUntouched) {
  // A test-made device node where the test may make one (root in a container), /dev/null's numbers.
  TempDir dir;
  const std::string dev = dir / "null";
  if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) GTEST_SKIP() << "mknod not permitted here";
  EXPECT_EQ(ErrorOf([&] { WriteOutputFile(dev, "x"); }),
            dev +
                ": refused: it is a character device; ppdeploy writes only regular files (or - for stdout); it "
                "was not touched");
  EXPECT_TRUE(S_ISCHR(ModeOf(dev)));
}

TEST(OutputFileTest, AMissingDirectoryNamesTheTarget) {
  TempDir dir;
  const std::string err = ErrorOf([&] { WriteOutputFile(dir / "no/such/out.json", "x"); });
  EXPECT_EQ(err, dir / "no/such/out.json" + ": cannot write: cannot create a temporary file in " + dir / "no/such" +
                     ": No such file or directory");
}

TEST(OutputFileTest, WriteFileTextIsTheSameWriter) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_NE(ErrorOf([&] { WriteFileText(dir / "fifo", "x"); }).find("refused: it is a FIFO"), std::string::npos);
}

TEST(CheckedFdBufferTest, RemembersTheFirstErrorOfAFullDevice) {
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (fd < 0) GTEST_SKIP() << "no /dev/full";
  {
    CheckedFdBuffer buf(fd, 16);
    std::ostream out(&buf);
    out << "0123456789abcdefghij";  // more than the buffer: written now
    out.flush();
    EXPECT_FALSE(out.good());
    EXPECT_EQ(buf.error(), ENOSPC);
    EXPECT_EQ(buf.bytes_written(), 0);
  }
  ::close(fd);
}

TEST(CheckedFdBufferTest, DeliversEverythingToAPipe) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  {
    CheckedFdBuffer buf(p[1], 4);
    std::ostream out(&buf);
    out << "hello" << ' ' << 42 << "\n";
    out.flush();
    EXPECT_TRUE(out.good());
    EXPECT_EQ(buf.bytes_written(), 9);
  }
  ::close(p[1]);
  char text[32] = {};
  EXPECT_EQ(::read(p[0], text, sizeof text), 9);
  EXPECT_STREQ(text, "hello 42\n");
  ::close(p[0]);
}

TEST(JsonlWriterTest, RefusesAFifoUntouchedAndCountsRecords) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  // Opening a FIFO for writing would wait for a reader: the refusal comes before any open.
  EXPECT_NE(ErrorOf([&] { JsonlWriter w(dir / "fifo"); }).find("refused: it is a FIFO"), std::string::npos);
  EXPECT_TRUE(S_ISFIFO(ModeOf(dir / "fifo")));
  JsonlWriter w(dir / "r.jsonl");
  w.Write({{"a", 1}});
  w.Write({{"a", 2}});
  EXPECT_EQ(w.records(), 2);
  w.Close();
  EXPECT_EQ(Slurp(dir / "r.jsonl"), "{\"a\":1}\n{\"a\":2}\n");
}

TEST(ReadLimitTest, ANonRegularFileStopsAtEightMiB) {
  // The issue's `verdict /dev/zero`: the cap for a file with no size is 8 MiB, whatever the caller allows.
  EXPECT_EQ(ErrorOf([] { ReadFileText("/dev/zero", 4LL << 30); }),
            "/dev/zero: cannot read: more than the limit of 8388608 bytes (not a regular file; read up to the limit)");
}

}  // namespace
}  // namespace ppdeploy
