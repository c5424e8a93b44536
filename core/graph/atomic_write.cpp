// write_text_file_atomic: a save replaces the file in one rename, so a crash or a full disk leaves either the
// old file or the new one. The new file keeps what the old one had that a rename would lose: a symlink is
// followed (its target is replaced, the link stays), the mode and owner are copied, and a file with other
// hard links is rewritten in place once the full text is safely on disk beside it.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/graph/graph_io.h"

namespace fx {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTempMarker = ".tmp";

std::string temp_name(const fs::path& target) {
  return "." + target.filename().string() + std::string(kTempMarker) + std::to_string(::getpid());
}

// A save killed (SIGKILL, power loss) between creating and renaming its temporary leaves ".NAME.tmpPID"
// behind; the next save of NAME removes those whose process is gone.
void remove_stale_temporaries(const fs::path& dir, const fs::path& target) {
  const std::string prefix = "." + target.filename().string() + std::string(kTempMarker);
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH)) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
}

std::string os_error(int err) { return std::strerror(err); }

// Why a file could not be created, in words a person can act on (errno is read before any cleanup).
std::string create_failure(const fs::path& path, int err) {
  if (err == ENAMETOOLONG) return "cannot write " + path.string() + ": the file name is too long";
  if (err == ENOENT) return "cannot write " + path.string() + ": the folder " + path.parent_path().string() + " does not exist";
  if (err == EACCES || err == EPERM || err == EROFS) {
    return "cannot write " + path.string() + ": the folder is not writable (" + os_error(err) + ")";
  }
  return "cannot write " + path.string() + ": " + os_error(err);
}

bool write_all(int fd, std::string_view text, int& err) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : ENOSPC;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Rewrites a hard-linked file in place so every link sees the new text. Not atomic: a crash midway leaves a
// cut file, so the caller writes the complete temporary first and keeps it when this fails.
Expected<bool> rewrite_in_place(const fs::path& target, std::string_view text) {
  const int fd = ::open(target.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  int err = errno;
  if (fd < 0) return Diagnostic{"", "cannot rewrite " + target.string() + ": " + os_error(err)};
  const bool ok = write_all(fd, text, err) && ::fsync(fd) == 0;
  if (!ok && err == 0) err = errno;
  ::close(fd);
  if (!ok) return Diagnostic{"", "cannot rewrite " + target.string() + ": " + os_error(err)};
  return true;
}

}  // namespace

Expected<bool> write_text_file_atomic(const fs::path& path_in, std::string_view text) {
  std::error_code ec;
  // Save through a symlink to its target, so the link itself survives.
  fs::path path = path_in;
  if (fs::is_symlink(path, ec)) {
    const fs::path resolved = fs::weakly_canonical(path, ec);
    if (!ec) path = resolved;
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  remove_stale_temporaries(dir, path);
  struct stat old {};
  const bool exists = ::stat(path.c_str(), &old) == 0 && S_ISREG(old.st_mode);
  const fs::path tmp = dir / temp_name(path);
  const mode_t mode = exists ? (old.st_mode & 07777) : 0666;  // new files: 0666 less the umask, as fopen
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    return Diagnostic{"", create_failure(path, err)};
  }
  int err = 0;
  bool ok = write_all(fd, text, err);
  if (ok && exists) {
    (void)::fchmod(fd, mode);                    // the umask may have narrowed it
    if (::fchown(fd, old.st_uid, old.st_gid) != 0) {
      // Best effort: only root may give a file away; the save goes on with this user's ownership.
    }
  }
  if (ok && ::fsync(fd) != 0) {
    ok = false;
    err = errno;
  }
  ::close(fd);
  if (!ok) {
    fs::remove(tmp, ec);
    return Diagnostic{"", "cannot write " + path.string() + ": " + os_error(err) +
                              (err == ENOSPC || err == EFBIG || err == EDQUOT ? " (disk full?)" : "")};
  }
  if (exists && old.st_nlink > 1) {
    auto r = rewrite_in_place(path, text);
    if (!r) return Diagnostic{"", r.errors()[0].message + "; the complete text is in " + tmp.string()};
    fs::remove(tmp, ec);
    return r;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;  // before the cleanup below can change it
    fs::remove(tmp, ec);
    return Diagnostic{"", "cannot replace " + path.string() + ": " + os_error(err)};
  }
  return true;
}

}  // namespace fx
