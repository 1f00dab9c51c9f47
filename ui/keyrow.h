#pragma once

#include "idem/format/record.h"

#include <QByteArray>
#include <QByteArrayView>

#include <algorithm>
#include <QMetaType>
#include <QString>
#include <QVector>

// One key as the console shows it: a compact copy of what the monitor read (never the stored
// response), with deadlines on the server's clock so countdowns need no Redis round trip.
// Compact because a million of them must fit in a few hundred MB: the id is derived from the
// key, one byte array serves as the owner token (hashes) or the value's SHA1 (strings), and
// the note is only set when there is something to say.
struct KeyRow {
    enum class Type : quint8 { Hash, String, List, Set, ZSet, Stream, Row, Other }; // Row: PostgreSQL
    enum Flag : quint8 {
        Terminal = 1,      // FAILED and terminal
        StaleWhenRead = 2, // STARTED and already stale when read, with no time to count down to
        LeaseField = 4,    // a hash with idem's lease_until_ms (what a guarded purge compares)
        ForeignStatus = 8, // a hash whose state is in a foreign "status" field (kept in note)
        Blocked = 16,      // STARTED with no lease: its library blocks the key until the TTL ends
        Partial = 32,      // classified from the first and last bytes of a larger value
        Lab = 64,          // written by the race lab under its own namespace (shown FOREIGN)
        MayBeLive = 128,   // not a record idem reads whole, but its status says in progress
    };

    // the fields every tick reads for every row (counters, filters, countdowns) come first, so a
    // pass over a million rows touches one cache line of each, not three
    idem::RecordState state = idem::RecordState::Malformed;
    idem::RecordFormat format = idem::RecordFormat::Unknown;
    Type type = Type::Other;
    quint8 flags = 0;
    quint8 node = 0; // on a cluster: 1 + the index of the node it was read from (the worker's list)
    qint32 attempt = 0;
    quint32 seenInGeneration = 0;
    quint32 valueBytes = 0;  // strings: the length the guard was read with
    // server clock; -1: the key has no TTL; -2: the store keeps no expiry idem can read (a table
    // another program writes: its rows stay until that program deletes them)
    qint64 expiresAtMs = -1;
    // server clock; 0: none. STARTED turns stale then (its lease, or its start + the in-progress
    // window); COMPLETED turns EXPIRED (its library's own expiry)
    qint64 changesAtMs = 0;
    qint64 leaseUntilMs = 0; // server clock; 0: none
    qint64 createdMs = 0;    // server clock; 0: unknown
    qint64 fence = 0;
    quint32 guardBytes = 0;  // strings: how many first bytes the guard's SHA1 covers
    QByteArray key;          // the Redis key, as bytes
    // hash: the SHA1 of the fields read (20 bytes, Record::guardSha1), then the owner token; row:
    // the owner; string: SHA1 of its first guardBytes (and, larger, of its last guardBytes too)
    QByteArray guard;
    QString note;            // a foreign hash's raw status; else why not a record, or what to know

    static KeyRow fromRecord(const idem::Record& r, qint64 serverNowMs, std::string_view keyNamespace);
    idem::Record toGuardRecord() const;

    QString keyText() const { return QString::fromUtf8(key); }
    const char* typeName() const; // "hash", "string", ... as Redis says
    // the bytes id() shows: <id> of "<namespace>:{<id>}", else the whole key
    QByteArrayView idBytes(qsizetype namespaceLength) const;
    QString id(qsizetype namespaceLength) const; // the part inside the braces, or the whole key
    QByteArrayView ownerBytes() const
    {
        return type == Type::Hash ? QByteArrayView(guard).sliced(std::min(guard.size(), kDigestBytes))
               : type == Type::Row ? QByteArrayView(guard)
                                   : QByteArrayView();
    }
    QString owner() const { return QString::fromLatin1(ownerBytes()); }
    static constexpr qsizetype kDigestBytes = 20;
    bool terminal() const { return flags & Terminal; }
    bool noTtl() const { return expiresAtMs == -1; }
    bool noExpiryKept() const { return expiresAtMs == -2; }
    bool blocked() const { return flags & Blocked; }
    bool lab() const { return flags & Lab; }
    // A lock whose owner may still run (idem::mayBeLiveLock): purging it lets a duplicate run beside it
    bool mayBeLive(qint64 serverNowMs) const
    {
        return (state == idem::RecordState::Started && !isStale(serverNowMs)) || (flags & MayBeLive);
    }
    // Stale goes on the clock: a lease that ends between two scans turns the row stale on time.
    bool isStale(qint64 serverNowMs) const
    {
        return state == idem::RecordState::Started &&
               ((changesAtMs > 0 && changesAtMs <= serverNowMs) || (flags & StaleWhenRead));
    }
    // So does expiry: a COMPLETED record past its library's own expiry is EXPIRED.
    idem::RecordState stateAt(qint64 serverNowMs) const
    {
        if (state == idem::RecordState::Completed && changesAtMs > 0 && changesAtMs <= serverNowMs)
            return idem::RecordState::Expired;
        return state;
    }
    // What force-fail takes: work in progress, or a failure (to make it retryable or terminal). A
    // finished record keeps its result; a key that is not a record has no state to fail.
    bool forceFailable(qint64 serverNowMs) const
    {
        const idem::RecordState s = stateAt(serverNowMs);
        return s == idem::RecordState::Started || s == idem::RecordState::Failed;
    }
};
Q_DECLARE_TYPEINFO(KeyRow, Q_RELOCATABLE_TYPE);
Q_DECLARE_METATYPE(KeyRow)

// Text from the server as the console shows it: control characters (C0, DEL, C1) and Unicode
// bidirectional controls (which can make a key read as another: "Trojan Source") each become '?',
// as idemctl prints them. For the eye only: actions, exports and the clipboard keep the bytes.
QString shownText(const QString& text);

struct ScanSummary {
    quint64 generation = 0;
    qint64 keysSeen = 0;
    qint64 refused = 0; // keys SCAN listed that this user may not read (NOPERM)
    qint64 pages = 0;
    qint64 elapsedMs = 0;
    qint64 serverNowMs = 0;
};
Q_DECLARE_METATYPE(ScanSummary)
