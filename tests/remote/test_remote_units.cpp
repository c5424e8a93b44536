// Target URLs, the saved list, quoting checked through a real /bin/sh, ssh's errors as one line, versions.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "app/remote/process.h"
#include "app/remote/remote_run.h"
#include "app/remote/ssh.h"
#include "app/remote/target.h"

namespace fx::remote {
namespace {

RunTarget parse(const std::string& url) {
  std::string error;
  auto t = parse_target_url(url, &error);
  EXPECT_TRUE(t) << error;
  return t.value_or(RunTarget{});
}

std::string parse_error(const std::string& url) {
  std::string error;
  EXPECT_FALSE(parse_target_url(url, &error)) << url;
  return error;
}

TEST(RunTarget, ParsesSshAndSlurmUrls) {
  const RunTarget a = parse("ssh://alice@gpu-box:2222?cli=/opt/fx/bin/fusion-cli&timeout=5");
  EXPECT_EQ(a.kind, RunTarget::Kind::ssh);
  EXPECT_EQ(a.destination(), "alice@gpu-box");
  EXPECT_EQ(a.port, 2222);
  EXPECT_EQ(a.cli, "/opt/fx/bin/fusion-cli");
  EXPECT_EQ(a.connect_timeout_s, 5);
  const RunTarget alias = parse("ssh://workshop");  // a Host alias: ssh's config decides the rest
  EXPECT_EQ(alias.destination(), "workshop");
  EXPECT_EQ(alias.port, 0);
  const RunTarget v6 = parse("ssh://[::1]:22");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 22);
  const RunTarget s = parse("slurm://login.cluster?partition=gpu%20a&gpus=2&time=0:30:00&workdir=/scratch/me");
  EXPECT_EQ(s.kind, RunTarget::Kind::slurm);
  EXPECT_EQ(s.partition, "gpu a");
  EXPECT_EQ(s.gpus, 2);
  EXPECT_EQ(s.time_limit, "0:30:00");
  EXPECT_EQ(s.workdir, "/scratch/me");
  EXPECT_FALSE(parse("local").remote());
}

TEST(RunTarget, RefusesWhatSshWouldMisread) {
  EXPECT_NE(parse_error("ssh://-oProxyCommand=touch%20x").find("host name"), std::string::npos);
  EXPECT_NE(parse_error("ssh://-x@host").find("user name"), std::string::npos);
  EXPECT_NE(parse_error("ssh://host:99999").find("port"), std::string::npos);
  EXPECT_NE(parse_error("ssh://host?partition=gpu").find("unknown setting 'partition'"), std::string::npos);
  EXPECT_NE(parse_error("slurm://host?time=$(reboot)").find("time"), std::string::npos);
  EXPECT_NE(parse_error("ssh://host?cli=a%0Ab").find("one line"), std::string::npos);
  EXPECT_NE(parse_error("http://host").find("neither"), std::string::npos);
}

TEST(RunTarget, SavedListRoundTripsAndNamesResolve) {
  const auto dir = std::filesystem::temp_directory_path() / ("fx-targets-" + std::to_string(::getpid()));
  const std::string file = (dir / "fusion-explorer" / "targets.json").string();
  std::string error;
  RunTarget t = parse("ssh://bob@10.0.0.7:2200");
  t.name = "lab H100";
  ASSERT_TRUE(save_targets(file, {t}, &error)) << error;
  EXPECT_EQ(std::filesystem::status(file).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto back = resolve_target("lab H100", file, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->destination(), "bob@10.0.0.7");
  EXPECT_EQ(back->port, 2200);
  EXPECT_FALSE(resolve_target("nowhere", file, &error));
  EXPECT_NE(error.find("no run target named 'nowhere'"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(ShellQuote, EveryNastyWordSurvivesARealShell) {
  for (const std::string& word : {std::string("plain"), std::string("it's"), std::string("$(touch /tmp/fx-pwned)"),
                                 std::string("a; rm -rf ~"), std::string("line\nbreak"), std::string("`id`"),
                                 std::string("\"double\" \\ back"), std::string(""), std::string("'''")}) {
    const ChildExit r = run_captured({"/bin/sh", "-c", "printf %s " + shell_quote(word)}, "", 10);
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.out, word);
  }
}

TEST(SshFailure, EachKindIsOneClearLine) {
  RunTarget t = parse("ssh://me@gpu:2022?timeout=7");
  EXPECT_EQ(describe_ssh_failure("ssh: Could not resolve hostname gpu: Name or service not known\r\n", t),
            "unknown host name 'gpu' (not in DNS, /etc/hosts or ~/.ssh/config)");
  EXPECT_EQ(describe_ssh_failure("ssh: connect to host gpu port 2022: Connection timed out\r\n", t),
            "no answer from gpu port 2022 within 7 s (connection timed out)");
  EXPECT_NE(describe_ssh_failure("Host key verification failed.\r\n", t).find("`ssh -p 2022 me@gpu`"), std::string::npos);
  EXPECT_NE(describe_ssh_failure("me@gpu: Permission denied (publickey).\r\n", t).find("refused the login of me"),
            std::string::npos);
  EXPECT_EQ(describe_ssh_failure("kex_exchange_identification: weird\n\n", t), "ssh: kex_exchange_identification: weird");
}

TEST(Ssh, ControlSocketsFitAUnixSocketPathAndHostKeyCheckingStaysOn) {
  // A runtime folder too long for a socket's 108 bytes: the sockets go to /tmp/fusion-explorer-ssh-UID.
  const std::string saved = std::getenv("XDG_RUNTIME_DIR") ? std::getenv("XDG_RUNTIME_DIR") : "";
  ::setenv("XDG_RUNTIME_DIR", ("/tmp/" + std::string(80, 'r')).c_str(), 1);
  const auto argv = Ssh(parse("ssh://me@gpu:2222")).command("echo 'hi'");
  saved.empty() ? ::unsetenv("XDG_RUNTIME_DIR") : ::setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
  std::string control;
  for (const auto& a : argv) {
    if (a.rfind("ControlPath=", 0) == 0) control = a.substr(12);
    EXPECT_EQ(a.find("StrictHostKeyChecking"), std::string::npos) << a;
  }
  EXPECT_EQ(control, "/tmp/fusion-explorer-ssh-" + std::to_string(::getuid()) + "/%C");
  EXPECT_EQ(argv.back(), R"(exec /bin/sh -c 'echo '\''hi'\''')");
  EXPECT_EQ(argv[argv.size() - 2], "me@gpu");
  EXPECT_EQ(argv[argv.size() - 3], "--");
}

TEST(Versions, MajorAndMinorMustMatch) {
  EXPECT_TRUE(compatible_versions("0.1.0", "0.1.7"));
  EXPECT_FALSE(compatible_versions("0.1.0", "0.2.0"));
  EXPECT_FALSE(compatible_versions("1.1.0", "0.1.0"));
  EXPECT_EQ(cli_version().find('.'), 1u);
}

}  // namespace
}  // namespace fx::remote
