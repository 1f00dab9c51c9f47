#pragma once

#include "idem/record.h"

#include <QByteArray>
#include <QMetaType>
#include <QString>
#include <QVector>

// One key as the console shows it: a compact copy of what the monitor read (never the stored
// response), with deadlines on the server's clock so countdowns need no Redis round trip.
struct KeyRow {
    QString key;
    QString id;
    idem::RecordState state = idem::RecordState::Malformed;
    idem::RecordFormat format = idem::RecordFormat::Unknown;
    qint64 staleAtMs = 0;    // server clock: when a STARTED record counts as stale (0: not known to)
    bool terminal = false;
    QString note;            // why malformed, or why stale when it was read
    qint64 expiresAtMs = -1; // server clock; -1: the key has no TTL
    qint64 createdMs = 0;    // server clock; 0: unknown
    qint64 leaseUntilMs = 0; // server clock; 0: none
    QString owner;
    qint64 fence = 0;
    qint64 attempt = 0;
    // what unlinkIfUnchanged compares: the key's type and, for hashes, state/token/lease;
    // for small strings the value
    QByteArray keyType, guardState, guardToken, guardLease, guardValue;
    quint64 seenInGeneration = 0;

    static KeyRow fromRecord(const idem::Record& r, qint64 serverNowMs);
    idem::Record toGuardRecord() const;
    bool noTtl() const { return expiresAtMs == -1; }
    // Stale goes on the clock: a lease that ends between two scans turns the row stale on time.
    bool isStale(qint64 serverNowMs) const
    {
        return state == idem::RecordState::Started && staleAtMs > 0 && staleAtMs <= serverNowMs;
    }
};
Q_DECLARE_METATYPE(KeyRow)

struct ScanSummary {
    quint64 generation = 0;
    qint64 keysSeen = 0;
    qint64 pages = 0;
    qint64 elapsedMs = 0;
    qint64 serverNowMs = 0;
};
Q_DECLARE_METATYPE(ScanSummary)
