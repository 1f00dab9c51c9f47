// What the history suites share: a transition of the kind the console records.
#pragma once

#include "idem/monitor/history.h"

#include <cstdint>
#include <string>

namespace historytest {

// STARTED by `owner`, as a keyspace notification reports it: lease 1 s, kept 60 s
inline idem::Transition started(std::int64_t at, const std::string& key, const std::string& owner, int attempt = 1)
{
    idem::Transition t;
    t.atMs = at;
    t.key = key;
    t.state = idem::RecordState::Started;
    t.format = idem::RecordFormat::Native;
    t.owner = owner;
    t.source = idem::Transition::Notification;
    t.attempt = attempt;
    t.fence = at;
    t.leaseUntilMs = at + 1000;
    t.expiresAtMs = at + 60'000;
    return t;
}

} // namespace historytest
