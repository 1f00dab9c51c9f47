#pragma once

// idem's own record, written as lua/*.lua write it (a first attempt, a renewal, a later attempt, a
// completion, a failure, an operator's force-fail) from fuzzed values, then decoded: what idem
// wrote, idem reads back as written (state, fence, lease, owner, attempt, fingerprint, result).
#include "fuzzcheck.h"

#include "format/time.h"
#include "idem/format/record.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace fuzzsupport {

inline void nativeRoundTrip(Input& f)
{
    using namespace idem;
    constexpr std::int64_t kMaxMs = timefield::kMaxMs;
    const int stage = f.byte() % 6; // 0 first attempt, 1 renewed, 2 later attempt, 3 completed, 4 failed, 5 forced
    const bool withFp = f.byte() & 1;
    const bool terminal = f.byte() & 1;
    // every time idem writes is the server's clock: after 2000 (earlier ones read as no time at all)
    const std::int64_t fence = f.range(timefield::kMinMs * 1000, kMaxMs * 1000); // µs on the server's clock
    const std::int64_t fenceMs = fence / 1000;
    const std::int64_t leaseMs = f.range(1, kMaxMs - fenceMs + 1); // lease_ms as given
    const std::int64_t attempt = f.range(2, 1'000'000'000);
    const std::int64_t startedMs = f.range(fenceMs, kMaxMs);       // a later attempt's start
    const std::int64_t untilMs = f.range(startedMs, kMaxMs);       // its deadline, or a renewal's
    const std::int64_t createdMs = f.range(timefield::kMinMs, startedMs);
    const std::int64_t retentionMs = f.range(1, kMaxMs);
    const std::int64_t doneMs = f.range(fenceMs, kMaxMs);          // completed / failed at
    const std::int64_t nowMs = f.range(std::max<std::int64_t>(doneMs, 1), kMaxMs); // when it is read
    const std::string token(f.section()), fp(f.section()), response(f.section()), error(f.section());
    const std::string who(f.section()), why(f.section());

    std::vector<std::pair<std::string, std::string>> h;
    const auto hset = [&](std::string_view k, std::string v) {
        for (auto& [name, value] : h)
            if (name == k) {
                value = std::move(v);
                return;
            }
        h.emplace_back(std::string(k), std::move(v));
    };
    const auto hdel = [&](std::string_view k) {
        std::erase_if(h, [&](const auto& kv) { return kv.first == k; });
    };
    const bool later = stage == 2 || ((stage == 3 || stage == 4 || stage == 5) && attempt % 2 == 0);
    if (!later) { // acquire.lua, the hot path
        hset("state", "STARTED");
        if (withFp)
            hset("fp", fp);
        hset("token", token);
        hset("fence", std::to_string(fence));
        hset("lease_ms", std::to_string(leaseMs));
    } else { // acquire.lua, a takeover or a retry after FAILED
        hset("state", "STARTED");
        hset("fp", fp);
        hset("token", token);
        hset("fence", std::to_string(fence));
        hset("attempt", std::to_string(attempt));
        hset("started_ms", std::to_string(startedMs));
        hset("lease_until_ms", std::to_string(untilMs));
        hset("created_ms", std::to_string(createdMs));
    }
    if (stage == 1) // renew.lua
        hset("lease_until_ms", std::to_string(untilMs));
    std::int64_t ttlMs = -2;
    if (stage == 3) { // complete.lua: the TTL counts the retention down from the completion
        hset("state", "COMPLETED");
        hset("response", response);
        hset("retention_ms", std::to_string(retentionMs));
        ttlMs = std::max<std::int64_t>(retentionMs - (nowMs - doneMs), 0);
    }
    if (stage == 4) { // fail.lua
        hset("state", "FAILED");
        hset("failure", terminal ? "terminal" : "retryable");
        hset("error", error);
        hset("finished_ms", std::to_string(doneMs));
    }
    if (stage == 5) { // force_fail.lua
        hdel("token");
        hset("state", "FAILED");
        hset("failure", terminal ? "terminal" : "retryable");
        hset("error", "forced: " + why);
        hset("finished_ms", std::to_string(doneMs));
        hset("op", "force-fail");
        hset("op_by", who);
        hset("op_at_ms", std::to_string(doneMs));
        hset("op_reason", why);
    }

    KeyRead in;
    in.key = "idempotency:{" + (token.empty() ? std::string("_") : token) + "}"; // (ids are never empty)
    in.type = "hash";
    in.ttlMs = ttlMs;
    in.fields = h;
    DecodeOptions o;
    o.nowMs = nowMs;
    const Record r = decode(in, o);
    const std::string story = std::string(nameOf(r.state)) + " (stage " + std::to_string(stage) + "): " + r.reason;

    FUZZ_CHECK(r.format == RecordFormat::Native, story);
    const RecordState want = stage == 3 ? RecordState::Completed
                             : stage >= 4 ? RecordState::Failed
                                          : RecordState::Started;
    FUZZ_CHECK(r.state == want, story);
    FUZZ_CHECK(r.fence == fence, story);
    FUZZ_CHECK(r.owner == (stage == 5 ? std::string() : token), story);
    FUZZ_CHECK(r.attempt == (later ? attempt : 1), story);
    FUZZ_CHECK(r.fingerprint == (later || withFp ? fp : std::string()), story);
    const std::int64_t start = later ? startedMs : fenceMs;
    FUZZ_CHECK(r.startedMs == start, story);
    FUZZ_CHECK(r.createdMs == (later ? createdMs : fenceMs), story);
    const std::int64_t lease = later || stage == 1 ? untilMs : std::min(fenceMs + leaseMs, kMaxMs);
    if (stage <= 2) {
        FUZZ_CHECK(r.leaseUntilMs == lease, story + " lease " + std::to_string(r.leaseUntilMs.value_or(-1)) +
                                                " want " + std::to_string(lease));
        FUZZ_CHECK(r.stale == (lease <= nowMs), story);
    } else {
        FUZZ_CHECK(!r.stale, story);
    }
    if (stage == 3) {
        FUZZ_CHECK(r.response == response, story);
        if (retentionMs - (nowMs - doneMs) >= 0) // still alive: its TTL tells when it completed
            FUZZ_CHECK(r.finishedMs == doneMs, story);
    }
    if (stage >= 4) {
        FUZZ_CHECK(r.terminal == terminal, story);
        FUZZ_CHECK(r.error == (stage == 5 ? "forced: " + why : error), story);
        FUZZ_CHECK(r.finishedMs == doneMs, story);
    }
    if (stage == 5) {
        FUZZ_CHECK(r.op == "force-fail" && r.opBy == who && r.opReason == why && r.opAtMs == doneMs, story);
    }
}

} // namespace fuzzsupport
