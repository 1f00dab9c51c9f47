// idemctl run: an exactly-once wrapper for any command.
#include "cli.h"

#include "idem/base64.h"
#include "idem/duration.h"
#include "idem/errors.h"
#include "idem/engine/executor.h"
#include "idem/engine/fingerprint.h"
#include "idem/pg/pgstore.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace idemctl {

namespace {

const char* kRunHelp = R"(usage: idemctl run --key ID [options] -- CMD [ARGS...]

Runs CMD only if ID has no completed run. While CMD runs its lease is renewed; when it ends, its
exit code and stdout are stored (stdout up to the response cap), so a duplicate prints the same
stdout and exits with the same code without running CMD.

options:
  --key ID             the idempotency id (required, 1..1024 bytes)
  --lease DUR          lease held while CMD runs, renewed every third of it (default 30s)
  --ttl DUR            how long the stored result is kept (default 24h)
  --payload-file F     fingerprint F's contents (JSON canonically): reusing ID with another
                       payload is refused with exit 65
  --wait DUR           when ID is in progress elsewhere, wait up to DUR for its result (and take
                       over if that run's lease expires) instead of exiting 75
  --on-failure P       what a non-zero exit of CMD does: store (default: duplicates replay the
                       exit code), release (forget it: the next delivery runs CMD again),
                       retryable (keep FAILED; next run retries), terminal (duplicates get exit 79)
  --max-response SIZE  cap of the stored result (default 512KiB)
  --min-replicas N     the lock and the result must reach N replicas (WAIT, same round trip): a
                       lock fewer acknowledge is released and CMD not run (69); a result fewer
                       acknowledge before the lease ends exits 70
  --replica-timeout DUR  how long each WAIT waits (default 1s)

Exit codes: CMD's own; 64 usage (or no such PostgreSQL database); 65 payload mismatch; 69 store
unavailable (CMD not run); 77 credentials refused or the user's ACL does not allow it (CMD not
run); 78 the key holds what is not idem's record (another program's lock, a newer schema's; CMD
not run); 70 CMD ran but its result was not stored (or not replicated); 75 in progress; 79
terminal failure stored.
)";

// The stored result: {"exit_code":N,"stdout":"..."} (or "stdout_b64" when stdout is not UTF-8),
// with "stdout_truncated":true when stdout did not fit under the cap.
std::string encodeResult(int exitCode, std::string out, bool truncated, std::size_t cap)
{
    for (;;) {
        nlohmann::json j;
        j["exit_code"] = exitCode;
        try {
            j["stdout"] = out;
            std::string text = j.dump();
            if (text.size() <= cap)
                return text;
        } catch (const nlohmann::json::exception&) {
        }
        j.erase("stdout");
        j["stdout_b64"] = idem::toBase64(out);
        if (truncated)
            j["stdout_truncated"] = true;
        std::string text = j.dump();
        if (text.size() <= cap)
            return text;
        out.resize(out.size() * 3 / 4); // shrink until it fits
        truncated = true;
    }
}

struct Replay {
    int exitCode = 0;
    std::string out;
};

Replay decodeResult(const std::string& response)
{
    auto j = nlohmann::json::parse(response, nullptr, false);
    if (j.is_object() && j.contains("exit_code") && j["exit_code"].is_number_integer()) {
        Replay r;
        r.exitCode = j["exit_code"].get<int>();
        if (j.contains("stdout") && j["stdout"].is_string())
            r.out = j["stdout"].get<std::string>();
        else if (j.contains("stdout_b64") && j["stdout_b64"].is_string())
            r.out = idem::fromBase64(j["stdout_b64"].get<std::string>()).value_or(std::string());
        return r;
    }
    // written by something other than idemctl run: print it as it is
    return Replay{0, response};
}

void writeAll(int fd, std::string_view data)
{
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return; // stdout closed: nothing more to tell
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
}

struct Child {
    int exitCode = 0;
    int signal = 0;
    std::string out;
    bool truncated = false;
    bool killedForLease = false;
    bool spawnFailed = false;
};

// Spawns CMD with stdout on a pipe; tees it to our stdout and keeps up to `cap` bytes.
Child runChild(const std::vector<std::string>& cmd, std::size_t cap, const std::stop_token& leaseLost)
{
    int fds[2];
    if (::pipe(fds) != 0)
        throw idem::Error(std::string("pipe: ") + std::strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    std::vector<std::string> args = cmd;
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    Child c;
    if (rc != 0) {
        ::close(fds[0]);
        const std::string msg = "idemctl run: cannot run '" + cmd.front() + "': " + std::strerror(rc) + "\n";
        writeAll(2, msg);
        c.exitCode = rc == ENOENT ? 127 : 126;
        c.spawnFailed = true;
        return c;
    }
    char buf[65536];
    for (;;) {
        pollfd p{fds[0], POLLIN, 0};
        const int ready = ::poll(&p, 1, 100);
        if (leaseLost.stop_requested() && !c.killedForLease) {
            writeAll(2, "idemctl run: lease lost while the command ran; stopping it (SIGTERM)\n");
            ::kill(pid, SIGTERM);
            c.killedForLease = true;
        }
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            continue;
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        writeAll(1, std::string_view(buf, static_cast<std::size_t>(n)));
        const std::size_t room = cap > c.out.size() ? cap - c.out.size() : 0;
        c.out.append(buf, std::min(room, static_cast<std::size_t>(n)));
        if (static_cast<std::size_t>(n) > room)
            c.truncated = true;
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) {
        c.exitCode = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        c.signal = WTERMSIG(status);
        c.exitCode = 128 + c.signal;
    }
    return c;
}

} // namespace

int cmdRun(const std::vector<std::string>& argv)
{
    Args args(argv,
              {"--key", "--lease", "--ttl", "--payload-file", "--wait", "--on-failure", "--max-response",
               "--min-replicas", "--replica-timeout"},
              {});
    if (args.flag("--help")) {
        std::fputs(kRunHelp, stdout);
        return Ok;
    }
    const Global g = globalFrom(args);
    const auto key = args.value("--key");
    if (!key)
        throw UsageFailure{"--key ID is required"};
    if (!args.hadDashes() || args.afterDashes().empty())
        throw UsageFailure{"give the command after --, e.g. idemctl run --key ID -- ./charge.sh"};
    if (!args.positional().empty())
        throw UsageFailure{"unexpected argument '" + args.positional().front() + "' before --"};

    idem::StoreOptions so;
    so.keyNamespace = g.keyNamespace;
    if (auto v = args.value("--lease"))
        so.lease = idem::parseDuration(*v);
    if (auto v = args.value("--ttl"))
        so.retention = so.failureRetention = idem::parseDuration(*v);
    if (auto v = args.value("--max-response"))
        so.maxResponseBytes = idem::parseSize(*v);
    so.minReplicas = number<int>(args.value("--min-replicas"), 0, 0, 100, "--min-replicas");
    if (auto v = args.value("--replica-timeout")) {
        if (!args.value("--min-replicas")) // (0 is accepted: scripts that always pass both turn it off)
            throw UsageFailure{"--replica-timeout needs --min-replicas N"};
        so.replicaTimeout = idem::parseDuration(*v);
    }
    if (so.lease.count() < 10)
        throw UsageFailure{"--lease must be at least 10ms"};
    if (so.retention.count() < 1)
        throw UsageFailure{"--ttl must be positive"};
    if (so.maxResponseBytes < 64)
        throw UsageFailure{"--max-response must be at least 64 bytes"};
    if (key->empty())
        throw UsageFailure{"--key must not be empty"};
    if (key->size() > so.maxIdBytes)
        throw UsageFailure{"--key is " + std::to_string(key->size()) + " bytes, over the " +
                           std::to_string(so.maxIdBytes) + "-byte limit"};
    std::optional<idem::Millis> wait;
    if (auto v = args.value("--wait"))
        wait = idem::parseDuration(*v);
    std::string onFailure = args.value("--on-failure").value_or("store");
    std::optional<idem::FailPolicy> failPolicy;
    if (onFailure != "store") {
        failPolicy = idem::failPolicyFromString(onFailure);
        if (!failPolicy)
            throw UsageFailure{"--on-failure must be store, release, retryable or terminal"};
    }
    std::string fp;
    if (auto f = args.value("--payload-file")) {
        std::ifstream in(*f, std::ios::binary);
        if (!in)
            throw UsageFailure{"cannot read --payload-file '" + *f + "': " + std::strerror(errno)};
        const std::string payload((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        fp = idem::fingerprint(payload);
    }

    // the store --url names: Redis, or PostgreSQL's leased mode (the same outcomes and exit codes)
    std::unique_ptr<idem::ConnectionPool> pool;
    std::unique_ptr<idem::Store> redis;
    std::unique_ptr<idem::PgStore> postgres;
    std::unique_ptr<idem::Executor> executorOwned;
    if (g.postgres) {
        if (so.minReplicas > 0)
            throw UsageFailure{"--min-replicas is for Redis; PostgreSQL's own replication settings apply"};
        idem::PgStoreOptions po;
        po.lease = so.lease;
        po.retention = so.retention;
        po.failureRetention = so.failureRetention;
        po.maxResponseBytes = so.maxResponseBytes;
        postgres = std::make_unique<idem::PgStore>(g.url, po);
        executorOwned = std::make_unique<idem::Executor>(static_cast<idem::LeaseStore&>(*postgres));
    } else {
        pool = std::make_unique<idem::ConnectionPool>(g.connection, 2);
        redis = std::make_unique<idem::Store>(*pool, so);
        executorOwned = std::make_unique<idem::Executor>(*redis);
    }
    idem::Executor& executor = *executorOwned;
    const std::vector<std::string> cmd = args.afterDashes();
    // encodeResult() shrinks what does not fit in the JSON envelope under the cap
    const std::size_t captureCap = so.maxResponseBytes;

    Child child;
    auto work = [&](const idem::WorkContext& ctx) -> idem::WorkResult {
        child = runChild(cmd, captureCap, ctx.leaseLost);
        if (child.spawnFailed) // a typo must not be stored as the id's result
            return idem::WorkResult::failure("command could not be started", idem::FailPolicy::Release);
        if (child.signal != 0)
            return idem::WorkResult::failure("command killed by signal " + std::to_string(child.signal),
                                             idem::FailPolicy::Release);
        if (child.exitCode != 0 && failPolicy)
            return idem::WorkResult::failure("command exited with code " + std::to_string(child.exitCode),
                                             *failPolicy);
        return idem::WorkResult::success(
            encodeResult(child.exitCode, child.out, child.truncated, so.maxResponseBytes));
    };

    const auto deadline = std::chrono::steady_clock::now() + wait.value_or(idem::Millis(0));
    idem::Outcome o;
    for (int round = 0;; ++round) {
        o = executor.executeWithFingerprint(*key, fp, work);
        if (o.kind != idem::OutcomeKind::InProgress || !wait)
            break;
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline)
            break;
        const auto step = std::min<idem::Millis>(
            {idem::Millis(std::max<std::int64_t>(o.remainingMs, 5)), idem::Millis(20 << std::min(round, 4)),
             std::chrono::duration_cast<idem::Millis>(deadline - now) + idem::Millis(1)});
        std::this_thread::sleep_for(step);
    }

    switch (o.kind) {
    case idem::OutcomeKind::Executed:
        return child.exitCode;
    case idem::OutcomeKind::Replayed: {
        const Replay r = decodeResult(o.response);
        writeAll(1, r.out);
        return r.exitCode;
    }
    case idem::OutcomeKind::InProgress:
        std::fprintf(stderr, "idemctl run: '%s' is in progress elsewhere (lease ends in %s)%s\n",
                     key->c_str(), idem::formatDuration(idem::Millis(o.remainingMs)).c_str(),
                     wait ? "; gave up waiting" : "");
        return InProgress;
    case idem::OutcomeKind::PayloadMismatch:
        std::fprintf(stderr, "idemctl run: %s\n", printable(o.error).c_str());
        return PayloadMismatch;
    case idem::OutcomeKind::Failed:
        if (o.workRan)
            return child.exitCode; // CMD failed now; its policy was applied
        std::fprintf(stderr, "idemctl run: '%s' has a terminal failure stored: %s\n", key->c_str(),
                     printable(o.error).c_str());
        return TerminalFailure;
    case idem::OutcomeKind::LeaseLost:
        std::fprintf(stderr, "idemctl run: %s\n", printable(o.error).c_str());
        return NotStored;
    case idem::OutcomeKind::NotReplicated:
        std::fprintf(stderr, "idemctl run: %s\n", printable(o.error).c_str());
        return NotStored;
    case idem::OutcomeKind::KeyUnusable:
        std::fprintf(stderr, "idemctl run: %s (command not run; retrying will not change it: see idemctl inspect "
                             "--key)\n", printable(o.error).c_str());
        return KeyUnusable;
    case idem::OutcomeKind::StoreUnavailable:
        if (const auto denied = g.postgres && !o.workRan ? pgPermissionFrom(o.error) : std::nullopt) {
            std::fprintf(stderr, "idemctl: %s (command not run)\n",
                         pgPermissionAdvice("run", {}, denied->first, denied->second).c_str());
            return NoPermission;
        }
        if (!o.workRan && isPermissionError(o.error)) { // the ACL: which permission, which role has it
            std::fprintf(stderr, "idemctl: %s (command not run)\n",
                         permissionAdvice("run", g.connection.user, g.keyNamespace, o.error).c_str());
            return NoPermission;
        }
        if (const auto refused = g.postgres && !o.workRan ? pgRefusalLine(o.error, true) : std::nullopt) {
            std::fprintf(stderr, "idemctl run: %s\n", refused->line.c_str());
            return refused->exit;
        }
        if (!o.workRan && isAuthenticationError(o.error)) {
            std::fprintf(stderr, "idemctl run: %s\n", authenticationAdvice(o.error, true).c_str());
            return NoPermission;
        }
        std::fprintf(stderr, "idemctl run: store unavailable: %s%s\n", printable(o.error).c_str(),
                     o.workRan ? "" : " (command not run)");
        return o.workRan ? NotStored : Unavailable;
    }
    return Unavailable;
}

} // namespace idemctl
