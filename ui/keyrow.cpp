#include "keyrow.h"

#include "idem/lab/racelab.h"
#include "idem/utf8.h"

#include <algorithm>

namespace {

const std::string* field(const idem::Record& r, std::string_view name)
{
    for (const auto& [k, v] : r.fields)
        if (k == name)
            return &v;
    return nullptr;
}

KeyRow::Type typeOf(const std::string& t)
{
    if (t == "hash")
        return KeyRow::Type::Hash;
    if (t == "string")
        return KeyRow::Type::String;
    if (t == "list")
        return KeyRow::Type::List;
    if (t == "set")
        return KeyRow::Type::Set;
    if (t == "zset")
        return KeyRow::Type::ZSet;
    if (t == "stream")
        return KeyRow::Type::Stream;
    if (t == "row")
        return KeyRow::Type::Row;
    return KeyRow::Type::Other;
}

const char* nameOfType(KeyRow::Type t)
{
    switch (t) {
    case KeyRow::Type::Hash: return "hash";
    case KeyRow::Type::String: return "string";
    case KeyRow::Type::List: return "list";
    case KeyRow::Type::Set: return "set";
    case KeyRow::Type::ZSet: return "zset";
    case KeyRow::Type::Stream: return "stream";
    case KeyRow::Type::Row: return "row";
    case KeyRow::Type::Other: break;
    }
    return "";
}

int fromHex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : 0;
}

// 40 hex digits as 20 bytes (anything else: 20 zero bytes, which no guard matches)
QByteArray digestBytes(const std::string& hex)
{
    QByteArray out(KeyRow::kDigestBytes, '\0');
    if (hex.size() == 2 * static_cast<std::size_t>(KeyRow::kDigestBytes))
        for (int i = 0; i < KeyRow::kDigestBytes; ++i)
            out[i] = static_cast<char>(fromHex(hex[2 * i]) * 16 + fromHex(hex[2 * i + 1]));
    return out;
}

std::string digestHex(QByteArrayView raw)
{
    static const char digits[] = "0123456789abcdef";
    std::string hex(2 * static_cast<std::size_t>(raw.size()), '0');
    for (qsizetype i = 0; i < raw.size(); ++i) {
        hex[2 * i] = digits[(static_cast<unsigned char>(raw[i]) >> 4) & 0xf];
        hex[2 * i + 1] = digits[static_cast<unsigned char>(raw[i]) & 0xf];
    }
    return hex;
}

} // namespace

KeyRow KeyRow::fromRecord(const idem::Record& r, qint64 serverNowMs, std::string_view keyNamespace)
{
    KeyRow row;
    row.key = QByteArray(r.key.data(), static_cast<qsizetype>(r.key.size()));
    row.state = r.state;
    row.format = r.format;
    row.type = typeOf(r.keyType);
    row.note = QString::fromStdString(r.reason);
    if (r.state == idem::RecordState::Failed && !r.error.empty()) // what a search for the failure finds
        row.note = QString::fromUtf8(r.error.data(), static_cast<qsizetype>(std::min<std::size_t>(r.error.size(), 1000)))
                       .simplified();
    if (r.terminal)
        row.flags |= Terminal;
    if (r.blocked)
        row.flags |= Blocked;
    if (r.partial)
        row.flags |= Partial;
    if (idem::notARecord(r.state) && idem::mayBeLiveLock(r))
        row.flags |= MayBeLive;
    row.leaseUntilMs = r.leaseUntilMs.value_or(0); // native lease or a library's deadline
    row.changesAtMs = r.changesAtMs.value_or(0);
    if (r.state == idem::RecordState::Started && r.stale && (!r.changesAtMs || *r.changesAtMs > serverNowMs))
        row.flags |= StaleWhenRead; // stale with nothing to count down to (Powertools without a deadline)
    // (a stale row's note is worked out from its deadline when shown: staleWhy's "expired 1m10s
    // ago" changes at every read, and a row that changes at every scan is re-sorted at every scan)
    row.expiresAtMs = r.ttlMs >= 0 ? serverNowMs + r.ttlMs : r.format == idem::RecordFormat::SqlTable ? -2 : -1;
    // a row of schema idem keeps its expiry: one past it stays where it was (no time left), not
    // moved to each read's "now"
    if (row.type == Type::Row && r.format == idem::RecordFormat::Native && r.expiresMs)
        row.expiresAtMs = *r.expiresMs;
    row.createdMs = r.createdMs.value_or(r.startedMs.value_or(0));
    row.fence = r.fence;
    row.attempt = static_cast<qint32>(r.attempt);
    if (row.type == Type::Hash) {
        row.guard = digestBytes(r.guardSha1);
        if (const auto* t = field(r, "token"))
            row.guard += QByteArray::fromStdString(*t);
        if (field(r, "lease_until_ms"))
            row.flags |= LeaseField;
        if (!field(r, "state"))
            if (const auto* st = field(r, "status")) {
                row.flags |= ForeignStatus; // the note holds the status as written: a guarded purge compares it
                row.note = QString::fromStdString(*st);
            }
    } else if (row.type == Type::String) {
        if (const std::string& h = r.guardSha1; h.size() == 40) {
            row.guard = digestBytes(h);
            row.valueBytes = static_cast<quint32>(std::max<std::int64_t>(0, r.valueBytes));
            row.guardBytes = static_cast<quint32>(r.guardBytes);
        }
    } else if (row.type == Type::Row) {
        row.guard = QByteArray::fromStdString(r.owner); // what a guarded purge compares, with the rest
    } else if (row.type == Type::Other) {
        row.note = QString::fromStdString(r.keyType) + u": "_qs + row.note;
    }
    // the race lab's keys on a watched server: a lab's, never mistaken for a broken record (unless
    // the lab's own namespace is the one watched)
    if (idem::isLabKey(r.key) && keyNamespace != idem::kLabNamespace) {
        row.state = idem::RecordState::Foreign;
        row.flags = static_cast<quint8>((row.flags & ~(Terminal | StaleWhenRead | Blocked)) | Lab);
        row.changesAtMs = 0;
        row.note = u"race lab key (idem-console or idemctl race): expires by itself within 10 minutes"_qs;
    }
    return row;
}

const char* KeyRow::typeName() const { return nameOfType(type); }

QByteArrayView KeyRow::idBytes(qsizetype namespaceLength) const
{
    // <namespace>:{<id>}
    if (key.size() >= namespaceLength + 3 && key.at(namespaceLength) == ':' && key.at(namespaceLength + 1) == '{' &&
        key.endsWith('}'))
        return QByteArrayView(key).sliced(namespaceLength + 2, key.size() - namespaceLength - 3);
    return QByteArrayView(key);
}

QString KeyRow::id(qsizetype namespaceLength) const
{
    const QByteArrayView v = idBytes(namespaceLength);
    return QString::fromUtf8(v.data(), v.size());
}

idem::Record KeyRow::toGuardRecord() const
{
    idem::Record r;
    r.key = key.toStdString();
    r.format = format; // an idem record's purge keeps its fence in its meta key
    r.keyType = nameOfType(type);
    if (type == Type::Other) // the type name leads the note
        r.keyType = note.section(u':', 0, 0).toStdString();
    if (type == Type::Hash) {
        // the state as written: idem's own `state`, a foreign `status` (kept in the note), else
        // "*" (any): a malformed hash, or a library's word under a name of its own (Powertools
        // for Java's "<key>:status"), which the digest compares. Its token and lease still match.
        std::string st = "*";
        if (flags & ForeignStatus)
            st = note.toStdString();
        else if (format == idem::RecordFormat::Native &&
                 (state == idem::RecordState::Started || state == idem::RecordState::Completed ||
                  state == idem::RecordState::Failed))
            st = std::string(idem::nameOf(state));
        r.fields.emplace_back("state", st);
        if (guard.size() > kDigestBytes)
            r.fields.emplace_back("token", guard.mid(kDigestBytes).toStdString());
        if (flags & LeaseField)
            r.fields.emplace_back("lease_until_ms", std::to_string(leaseUntilMs));
        // (the fields it covers are named from the key, as the scan that computed it named them)
        r.guardSha1 = digestHex(QByteArrayView(guard).first(std::min(guard.size(), kDigestBytes)));
    } else if (type == Type::Row) { // a PostgreSQL row: PgStore::purge compares these
        if (state == idem::RecordState::Started || state == idem::RecordState::Completed ||
            state == idem::RecordState::Failed)
            r.rawStatus = std::string(idem::nameOf(state));
        r.owner = guard.toStdString();
        r.fence = fence;
        r.attempt = attempt;
        if (leaseUntilMs != 0)
            r.leaseUntilMs = leaseUntilMs;
    } else if (type == Type::String && guard.size() == kDigestBytes) {
        r.guardSha1 = digestHex(guard);
        r.guardBytes = guardBytes;
        r.valueBytes = valueBytes;
        // the monitor reads a larger value's first and last guardBytes: the guard covers both
        r.guardTailBytes = valueBytes > guardBytes ? guardBytes : 0;
    }
    return r;
}

QString shownText(const QString& text)
{
    const auto masked = [](char16_t c) { return c < 0x20 || (c >= 0x7f && c <= 0x9f) || idem::bidiControl(c); };
    if (std::none_of(text.begin(), text.end(), [&](QChar c) { return masked(c.unicode()); }))
        return text;
    QString out = text;
    for (QChar& c : out)
        if (masked(c.unicode()))
            c = u'?';
    return out;
}
