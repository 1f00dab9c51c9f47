#include "keyrow.h"

namespace {
QByteArray field(const idem::Record& r, std::string_view name)
{
    for (const auto& [k, v] : r.fields)
        if (k == name)
            return QByteArray(v.data(), static_cast<qsizetype>(v.size()));
    return {};
}
} // namespace

KeyRow KeyRow::fromRecord(const idem::Record& r, qint64 serverNowMs)
{
    KeyRow row;
    row.key = QString::fromUtf8(r.key.data(), static_cast<qsizetype>(r.key.size()));
    row.id = QString::fromUtf8(r.id.data(), static_cast<qsizetype>(r.id.size()));
    row.state = r.state;
    row.format = r.format;
    if (r.state == idem::RecordState::Started) {
        if (r.leaseUntilMs)
            row.staleAtMs = *r.leaseUntilMs; // native lease or foreign lock_expiry
        else if (r.stale)
            row.staleAtMs = 1; // only started_at, and over the threshold already
    }
    row.terminal = r.terminal;
    row.note = QString::fromStdString(r.state == idem::RecordState::Malformed ? r.reason : r.staleWhy);
    row.expiresAtMs = r.ttlMs >= 0 ? serverNowMs + r.ttlMs : -1;
    row.createdMs = r.createdMs.value_or(r.startedMs.value_or(0));
    row.leaseUntilMs = r.state == idem::RecordState::Started ? r.leaseUntilMs.value_or(0) : 0;
    row.owner = QString::fromStdString(r.owner);
    row.fence = r.fence;
    row.attempt = r.attempt;
    row.keyType = QByteArray::fromStdString(r.keyType);
    if (r.keyType == "hash") {
        row.guardState = field(r, "state");
        if (row.guardState.isEmpty())
            row.guardState = field(r, "status");
        row.guardToken = field(r, "token");
        row.guardLease = field(r, "lease_until_ms");
    } else if (r.keyType == "string") {
        row.guardValue = field(r, "value");
    }
    return row;
}

idem::Record KeyRow::toGuardRecord() const
{
    idem::Record r;
    r.key = key.toStdString();
    r.keyType = keyType.toStdString();
    if (!guardState.isEmpty())
        r.fields.emplace_back("state", guardState.toStdString());
    if (!guardToken.isEmpty())
        r.fields.emplace_back("token", guardToken.toStdString());
    if (!guardLease.isEmpty())
        r.fields.emplace_back("lease_until_ms", guardLease.toStdString());
    if (!guardValue.isEmpty())
        r.fields.emplace_back("value", guardValue.toStdString());
    return r;
}
