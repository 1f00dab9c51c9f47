#include "idem/format/record.h"

#include "format/time.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace idem {

namespace {
struct FormatName {
    RecordFormat format;
    std::string_view name, library;
};
constexpr std::array<FormatName, kRecordFormats> kFormats = {{
    {RecordFormat::Native, "idem", "idem"},
    {RecordFormat::Powertools, "powertools", "AWS Powertools for Lambda (TypeScript)"},
    {RecordFormat::PowertoolsPython, "powertools-python", "AWS Powertools for Lambda (Python)"},
    {RecordFormat::NodeIdempotency, "node-idempotency", "@node-idempotency/core"},
    {RecordFormat::ExpressIdempotency, "express-idempotency", "express-idempotency"},
    {RecordFormat::IdempotentRequest, "idempotent-request", "idempotent-request (Ruby, Qonto)"},
    {RecordFormat::Camel, "camel", "Apache Camel idempotent repository"},
    {RecordFormat::StatusJson, "json", "a JSON record with a status field"},
    {RecordFormat::Plain, "plain", "a plain status word"},
    {RecordFormat::SqlTable, "sql-table", "a PostgreSQL table another program writes"},
    {RecordFormat::Unknown, "unknown", "no known library"},
    {RecordFormat::PowertoolsJava, "powertools-java", "AWS Powertools for Lambda (Java)"},
}};
} // namespace

std::string_view nameOf(RecordFormat f) { return kFormats[static_cast<std::size_t>(f)].name; }
std::string_view libraryOf(RecordFormat f) { return kFormats[static_cast<std::size_t>(f)].library; }

std::optional<RecordFormat> formatFromString(std::string_view name)
{
    for (const FormatName& f : kFormats)
        if (f.name == name)
            return f.format;
    if (name == "native")
        return RecordFormat::Native;
    return std::nullopt;
}

bool isRedisFormat(RecordFormat f) { return f != RecordFormat::SqlTable && f != RecordFormat::Unknown; }

std::string_view nameOf(RecordState s)
{
    switch (s) {
    case RecordState::Started: return "STARTED";
    case RecordState::Completed: return "COMPLETED";
    case RecordState::Failed: return "FAILED";
    case RecordState::Expired: return "EXPIRED";
    case RecordState::Malformed: return "MALFORMED";
    case RecordState::Foreign: return "FOREIGN";
    case RecordState::Unknown: break;
    }
    return "UNKNOWN";
}

bool notARecord(RecordState s)
{
    return s == RecordState::Malformed || s == RecordState::Foreign || s == RecordState::Unknown;
}

bool inProgressWord(std::string_view word)
{
    // the words libraries write for "running now", compared without case, '_', '-' or spaces
    std::string w;
    for (char c : word)
        if (c != '_' && c != '-' && c != ' ')
            w += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    static constexpr std::array<std::string_view, 18> words = {
        "STARTED", "STARTING", "INPROGRESS", "PENDING",  "PROCESSING", "RUNNING", "LOCKED", "ACQUIRED", "RESERVED",
        "EXECUTING", "INFLIGHT", "ACTIVE",   "CLAIMED", "WORKING",    "BUSY",    "HELD",   "LEASED",   "ONGOING"};
    return std::find(words.begin(), words.end(), w) != words.end();
}

bool lockName(std::string_view key)
{
    // a segment of the name that says lock: "lock:payments", "bull:emails:1:lock", "redlock:x",
    // "uniquejobs:<digest>:LOCKED", "orders-mutex"
    static constexpr std::array<std::string_view, 9> words = {"lock",  "locks",     "locked",  "mutex", "lease",
                                                              "leases", "semaphore", "redlock", "lck"};
    std::size_t i = 0;
    while (i < key.size()) {
        std::size_t j = i;
        while (j < key.size() && std::isalnum(static_cast<unsigned char>(key[j])))
            ++j;
        if (j > i && j - i <= 9) {
            std::string w(key.substr(i, j - i));
            for (char& c : w)
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            if (std::find(words.begin(), words.end(), w) != words.end())
                return true;
        }
        i = j + 1;
    }
    return false;
}

bool mayBeLiveLock(const Record& r)
{
    if (r.state == RecordState::Started)
        return !r.stale;
    // what idem cannot read as a record, whose word says in progress, or whose name says lock while
    // a TTL bounds it (Redlock, BullMQ's job locks, a library's mutex): someone may hold it now
    return notARecord(r.state) && (inProgressWord(r.rawStatus) || (r.ttlMs > 0 && lockName(r.key)));
}

bool anotherProgramsData(const Record& r) { return !r.program.empty(); }

std::optional<std::int64_t> parseTimestampMs(std::string_view s)
{
    return timefield::fromText(s, timefield::Unit::Guess, nullptr);
}

Record decodeHash(std::vector<std::pair<std::string, std::string>> fields, const DecodeOptions& o)
{
    KeyRead in;
    in.key = o.keyNamespace + ":{_}";
    in.type = "hash";
    in.ttlMs = o.ttlMs;
    in.fields = std::move(fields);
    Record r = decode(in, o);
    r.key.clear();
    r.id.clear();
    return r;
}

Record decodeString(std::string_view value, const DecodeOptions& o)
{
    KeyRead in;
    in.key = o.keyNamespace + ":{_}";
    in.type = "string";
    in.ttlMs = o.ttlMs;
    in.value = std::string(value);
    in.valueBytes = static_cast<std::int64_t>(value.size());
    Record r = decode(in, o);
    r.key.clear();
    r.id.clear();
    return r;
}

std::string idFromKey(std::string_view key, std::string_view keyNamespace)
{
    if (key.size() < keyNamespace.size() + 3 || !key.starts_with(keyNamespace) ||
        key.substr(keyNamespace.size(), 2) != ":{" || key.back() != '}')
        return {};
    return std::string(key.substr(keyNamespace.size() + 2, key.size() - keyNamespace.size() - 3));
}

} // namespace idem
