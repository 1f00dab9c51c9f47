// KeyTableModel and KeyFilterProxy: merges by key without resets, countdowns, stale on the
// clock, filters. QAbstractItemModelTester is attached before any data arrives.
#include "keyfilterproxy.h"
#include "keytablemodel.h"
#include "testsupport.h"
#include "theme.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QColor>
#include <QDateTime>
#include <QPalette>
#include <QSignalSpy>
#include <QtTest>

namespace {
KeyRow row(const QString& id, idem::RecordState s, qint64 now, qint64 ttlMs = 60000, qint64 leaseLeftMs = 0)
{
    KeyRow r;
    r.key = "ns:{" + id.toUtf8() + "}";
    r.state = s;
    r.format = idem::RecordFormat::Native;
    r.expiresAtMs = ttlMs < 0 ? -1 : now + ttlMs;
    r.createdMs = now - 1000;
    if (s == idem::RecordState::Started) {
        r.leaseUntilMs = now + leaseLeftMs;
        r.changesAtMs = r.leaseUntilMs; // as KeyRow::fromRecord sets it: the lease is when it turns stale
    }
    r.type = KeyRow::Type::Hash;
    return r;
}
// A model (namespace "ns") and a filter proxy over it, each watched by QAbstractItemModelTester
// from before any data arrives, with the model's resets and removals counted.
struct WatchedModel {
    KeyTableModel model;
    QAbstractItemModelTester tester{&model, QAbstractItemModelTester::FailureReportingMode::QtTest};
    KeyFilterProxy proxy;
    QAbstractItemModelTester proxyTester;
    QSignalSpy resets{&model, &QAbstractItemModel::modelReset};
    QSignalSpy removals{&model, &QAbstractItemModel::rowsRemoved};
    WatchedModel()
        : proxyTester((model.setKeyNamespace(u"ns"_qs), proxy.setSourceModel(&model), &proxy),
                      QAbstractItemModelTester::FailureReportingMode::QtTest)
    {
    }
};
} // namespace

class TestKeyModel : public QObject {
    Q_OBJECT
private slots:
    void mergesWithoutReset()
    {
        WatchedModel watched;
        KeyTableModel& model = watched.model;
        QSignalSpy& resets = watched.resets;
        QSignalSpy& removals = watched.removals;
        QSignalSpy inserts(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy changes(&model, &QAbstractItemModel::dataChanged);

        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        model.upsert({row(u"a"_qs, idem::RecordState::Started, now, 60000, 30000),
                      row(u"b"_qs, idem::RecordState::Completed, now),
                      row(u"c"_qs, idem::RecordState::Failed, now)},
                     now, 1);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(inserts.count(), 1);
        // the same keys again, one changed: no insert, one dataChanged
        auto a = row(u"a"_qs, idem::RecordState::Completed, now);
        model.upsert({a}, now, 1);
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(inserts.count(), 1);
        QVERIFY(changes.count() >= 1);
        QCOMPARE(model.data(model.index(model.rowOfKey(a.keyText()), KeyTableModel::State)).toString(), u"COMPLETED"_qs);
        // a second scan sees only b and d: a and c go, d comes
        model.upsert({row(u"b"_qs, idem::RecordState::Completed, now), row(u"d"_qs, idem::RecordState::Started, now, 1000, 500)},
                     now, 2);
        model.finishGeneration(2);
        QCOMPARE(model.rowCount(), 2);
        QVERIFY(model.rowOfKey(u"ns:{a}"_qs) < 0);
        QVERIFY(model.rowOfKey(u"ns:{d}"_qs) >= 0);
        model.removeKeys({u"ns:{b}"_qs, u"ns:{nope}"_qs});
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.idOf(model.row(0)), u"d"_qs);
        QCOMPARE(resets.count(), 0);
        QVERIFY(removals.count() >= 2);

        // a key twice in one report (SCAN may return a key more than once): one row, the later wins
        model.upsert({row(u"twice"_qs, idem::RecordState::Started, now, 60000, 30000),
                      row(u"twice"_qs, idem::RecordState::Completed, now)},
                     now, 3);
        QCOMPARE(model.rowCount(), 2);
        const int t = model.rowOfKey(u"ns:{twice}"_qs);
        QCOMPARE(model.data(model.index(t, KeyTableModel::State)).toString(), u"COMPLETED"_qs);
        model.upsert({row(u"twice"_qs, idem::RecordState::Failed, now)}, now, 3);
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.data(model.index(model.rowOfKey(u"ns:{twice}"_qs), KeyTableModel::State)).toString(), u"FAILED"_qs);
    }

    // A key with control or bidirectional characters is shown with '?' for each, as idemctl prints
    // it (U+202E would make "evil\u202Etxt.exe" read as another key); the key itself is kept
    void controlAndBidiCharactersShownMasked()
    {
        KeyTableModel model;
        model.setKeyNamespace(u"ns"_qs);
        const qint64 now = 1'700'000'000'000;
        const QString id = u"pay\u202Eroot\x1b[2Jx\u2066y"_qs;
        model.upsert({row(id, idem::RecordState::Completed, now)}, now, 1);
        const QModelIndex cell = model.index(0, KeyTableModel::Id);
        QCOMPARE(cell.data(Qt::DisplayRole).toString(), u"pay?root?[2Jx?y"_qs);
        QVERIFY(!cell.data(Qt::ToolTipRole).toString().contains(QChar(0x202e)));
        QCOMPARE(cell.data(KeyTableModel::KeyRole).toString(), u"ns:{"_qs + id + u"}"_qs); // actions keep the bytes
        QCOMPARE(shownText(u"plain ключ"_qs), u"plain ключ"_qs);
    }

    void countdownsAndStaleOnTheServerClock()
    {
        KeyTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        // the server's clock runs 1 hour ahead of ours: countdowns follow the server
        const qint64 server = QDateTime::currentMSecsSinceEpoch() + 3600'000;
        model.upsert({row(u"lease"_qs, idem::RecordState::Started, server, 60'500, 1200), // "1m" for 500 ms
                      row(u"forever"_qs, idem::RecordState::Completed, server, -1)},
                     server, 1);
        const int r = model.rowOfKey(u"ns:{lease}"_qs);
        QCOMPARE(model.data(model.index(r, KeyTableModel::Ttl)).toString(), u"1m"_qs);
        QCOMPARE(model.data(model.index(r, KeyTableModel::State)).toString(), u"STARTED"_qs);
        QVERIFY(!model.data(model.index(r, 0), KeyTableModel::StaleRole).toBool());
        QTRY_VERIFY_WITH_TIMEOUT(model.data(model.index(r, 0), KeyTableModel::StaleRole).toBool(), 3000);
        QCOMPARE(model.data(model.index(r, KeyTableModel::State)).toString(), u"STALE"_qs);
        QVERIFY(model.data(model.index(r, KeyTableModel::Note)).toString().startsWith(u"lease expired"_qs));
        // what a column may cut is whole in its tooltip
        QCOMPARE(model.data(model.index(r, KeyTableModel::Id), Qt::ToolTipRole).toString(), u"ns:{lease}"_qs);
        QVERIFY(model.data(model.index(r, KeyTableModel::Ttl)).toString() != u"1m"_qs); // counted down
        QVERIFY(model.data(model.index(r, 0), Qt::BackgroundRole).isValid());        // highlighted
        QVERIFY(model.data(model.index(r, KeyTableModel::State), Qt::DecorationRole).isValid());
        QVERIFY(model.data(model.index(r, KeyTableModel::State), Qt::ToolTipRole).toString().contains(u"Stale"_qs));
        const int f = model.rowOfKey(u"ns:{forever}"_qs);
        QCOMPARE(model.data(model.index(f, KeyTableModel::Ttl)).toString(), u"∞ no TTL"_qs);
        QVERIFY(model.data(model.index(f, 0), KeyTableModel::NoTtlRole).toBool());
        const auto s = model.stats();
        QCOMPARE(s.total, std::size_t(2));
        QCOMPARE(s.stale, std::size_t(1));
        QCOMPARE(s.noTtl, std::size_t(1));
        KeyRow owned = row(u"owned"_qs, idem::RecordState::Started, server, 60'000, 30'000);
        const QByteArray token = "0123456789abcdef0123456789abcdef";
        owned.guard = QByteArray(KeyRow::kDigestBytes, 'd') + token; // the fields' digest, then the owner
        model.upsert({owned}, server, 1);
        const int o = model.rowOfKey(u"ns:{owned}"_qs);
        QCOMPARE(model.data(model.index(o, KeyTableModel::Owner)).toString(), QString::fromLatin1(token)); // whole
        QCOMPARE(model.data(model.index(o, KeyTableModel::Owner), Qt::ToolTipRole).toString(), QString::fromLatin1(token));
    }

    // When the data stops being current the clock stops where it was last read: no countdown, no
    // lease running out on a guess, every cell in the disabled colour; thawed, time runs again
    void frozenDataStopsTheClock()
    {
        WatchedModel watched;
        KeyTableModel& model = watched.model;
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        model.upsert({row(u"lease"_qs, idem::RecordState::Started, now, 60'500, 700)}, now, 1);
        const int r = model.rowOfKey(u"ns:{lease}"_qs);
        const QString ttl = model.data(model.index(r, KeyTableModel::Ttl)).toString();
        QVERIFY(!model.data(model.index(r, 0), Qt::ForegroundRole).isValid());
        model.freezeAt(now);
        QVERIFY(model.isFrozen());
        QCOMPARE(model.serverNowMs(), now);
        QTest::qWait(1100); // the lease ends meanwhile, and a second passes
        QCOMPARE(model.data(model.index(r, KeyTableModel::Ttl)).toString(), ttl);
        QCOMPARE(model.data(model.index(r, KeyTableModel::State)).toString(), u"STARTED"_qs); // not stale on a guess
        QCOMPARE(model.data(model.index(r, KeyTableModel::Owner), Qt::ForegroundRole).value<QColor>(),
                 theme::staleText(QApplication::palette()));
        QCOMPARE(model.stats().stale, std::size_t(0));
        model.thaw();
        QVERIFY(!model.isFrozen());
        QCOMPARE(model.data(model.index(r, KeyTableModel::State)).toString(), u"STALE"_qs);
        QVERIFY(model.data(model.index(r, KeyTableModel::Ttl)).toString() != ttl);
        QVERIFY(!model.data(model.index(r, 0), Qt::ForegroundRole).isValid());
    }

    // The race lab's keys on a watched server are the lab's: FOREIGN with a note, never
    // malformed; watched as the lab's own namespace they read as what they are
    void labKeysAreTheLabs()
    {
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        idem::Record r;
        r.key = "racelab:naive-1a2b3c4d:{ev-0}";
        r.keyType = "string";
        r.state = idem::RecordState::Malformed;
        r.format = idem::RecordFormat::Plain;
        r.reason = "not a status word";
        r.ttlMs = 500'000;
        const KeyRow watched = KeyRow::fromRecord(r, now, "idempotency");
        QCOMPARE(watched.state, idem::RecordState::Foreign);
        QVERIFY(watched.lab());
        QVERIFY(watched.note.contains(u"race lab"_qs));
        const KeyRow own = KeyRow::fromRecord(r, now, idem::kLabNamespace);
        QCOMPARE(own.state, idem::RecordState::Malformed);
        QVERIFY(!own.lab());
        r.key = "racelabs:{x}"; // only the lab's own prefix
        QCOMPARE(KeyRow::fromRecord(r, now, "idempotency").state, idem::RecordState::Malformed);

        // a FAILED record's error is its note: what a search for the failure finds
        idem::Record failed;
        failed.key = "ns:{job}";
        failed.keyType = "string";
        failed.state = idem::RecordState::Failed;
        failed.format = idem::RecordFormat::StatusJson;
        failed.error = "worker exited\nwith status 3";
        failed.ttlMs = 1000;
        QCOMPARE(KeyRow::fromRecord(failed, now, "ns").note, u"worker exited with status 3"_qs); // on one line
    }

    void filtersAndSorting()
    {
        KeyTableModel model;
        model.setKeyNamespace(u"ns"_qs);
        KeyFilterProxy proxy;
        proxy.setSourceModel(&model);
        QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        QVector<KeyRow> rows;
        for (int i = 0; i < 30; ++i) {
            const auto s = static_cast<idem::RecordState>(i % 4);
            rows.push_back(row(u"id-%1"_qs.arg(i, 2, 10, QLatin1Char('0')), s, now, 1000 * (30 - i),
                               i % 8 == 0 ? -5000 : 5000));
        }
        model.upsert(rows, now, 1);
        proxy.setStateFilter(idem::StateFilter::Completed);
        QCOMPARE(proxy.rowCount(), 8); // i % 4 == 1
        proxy.setStateFilter(idem::StateFilter::Stale);
        QCOMPARE(proxy.rowCount(), 4); // i = 0, 8, 16, 24 are STARTED with an expired lease
        proxy.setStateFilter(idem::StateFilter::Any);
        proxy.setText(u"id-1"_qs);
        QCOMPARE(proxy.rowCount(), 10);
        proxy.setText(QString());
        proxy.sort(KeyTableModel::Ttl, Qt::AscendingOrder);
        QCOMPARE(proxy.data(proxy.index(0, 0)).toString(), u"id-29"_qs); // the soonest deadline
        proxy.sort(KeyTableModel::Ttl, Qt::DescendingOrder);
        QCOMPARE(proxy.data(proxy.index(0, 0)).toString(), u"id-00"_qs);
        proxy.sort(KeyTableModel::Id, Qt::DescendingOrder);
        QCOMPARE(proxy.data(proxy.index(0, 0)).toString(), u"id-29"_qs);
        proxy.sort(KeyTableModel::State, Qt::AscendingOrder);
        QVERIFY(proxy.data(proxy.index(0, KeyTableModel::State)).toString().startsWith(u"ST"_qs)); // STARTED or STALE
    }

    // Rows that arrive, change or go after a sort: sortAgain() places the new and changed ones
    // (few: by binary search into the sorted rest; many: a full sort), keeps the others' order,
    // keeps persistent indexes (a selection) on their rows, and finds every key at its row.
    void resortPlacesArrivalsAndChanges_data()
    {
        QTest::addColumn<int>("column");
        QTest::addColumn<int>("order");
        QTest::addColumn<int>("arrivals");
        QTest::newRow("ttl ascending, few") << int(KeyTableModel::Ttl) << int(Qt::AscendingOrder) << 20;
        QTest::newRow("id descending, few") << int(KeyTableModel::Id) << int(Qt::DescendingOrder) << 20;
        QTest::newRow("state ascending, few") << int(KeyTableModel::State) << int(Qt::AscendingOrder) << 20;
        QTest::newRow("note ascending, few") << int(KeyTableModel::Note) << int(Qt::AscendingOrder) << 20;
        QTest::newRow("fence descending, many") << int(KeyTableModel::Fence) << int(Qt::DescendingOrder) << 300;
        QTest::newRow("id ascending, many") << int(KeyTableModel::Id) << int(Qt::AscendingOrder) << 300;
    }
    void resortPlacesArrivalsAndChanges()
    {
        QFETCH(int, column);
        QFETCH(int, order);
        QFETCH(int, arrivals);
        KeyTableModel model;
        model.setKeyNamespace(u"ns"_qs);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        quint32 seed = 12345;
        const auto next = [&seed] { return seed = seed * 1664525u + 1013904223u; };
        const auto make = [&](const QString& id) {
            KeyRow r = row(id, static_cast<idem::RecordState>(next() % 4), now, 1000 + next() % 100000);
            r.fence = next() % 50; // many equal keys
            r.note = u"note %1"_qs.arg(next() % 30);
            return r;
        };
        QVector<KeyRow> rows;
        for (int i = 0; i < 500; ++i)
            rows.push_back(make(u"k-%1"_qs.arg(next() % 100000)));
        model.upsert(rows, now, 1);
        model.sort(column, static_cast<Qt::SortOrder>(order));
        QVERIFY(!model.needsSort());
        const QString watchedKey = model.row(250).keyText();
        const QPersistentModelIndex watched = model.index(250, KeyTableModel::Id);

        QVector<KeyRow> more;
        for (int i = 0; i < arrivals; ++i)
            more.push_back(make(u"new-%1"_qs.arg(next() % 100000)));
        for (int i = 0; i < 10; ++i) { // ten rows change in place
            KeyRow r = make(QString());
            r.key = model.row(static_cast<int>(next() % 500)).key;
            more.push_back(r);
        }
        model.upsert(more, now, 1);
        model.removeKeys({model.row(3).keyText(), model.row(400).keyText()});
        QVERIFY(model.needsSort());
        model.sortAgain();
        QVERIFY(!model.needsSort());

        // what the column sorts by (a stale row shows its lease, not its note, in the Note column)
        const auto value = [&](int r) {
            return column == KeyTableModel::Note ? QVariant(model.row(r).note)
                                                 : model.data(model.index(r, column), KeyTableModel::SortRole);
        };
        for (int r = 1; r < model.rowCount(); ++r) {
            const QVariant a = value(r - 1), b = value(r);
            const bool inOrder = order == Qt::AscendingOrder ? QVariant::compare(a, b) <= 0 : QVariant::compare(a, b) >= 0;
            QVERIFY2(inOrder, qPrintable(u"rows %1 and %2: %3, %4"_qs.arg(r - 1).arg(r).arg(a.toString(), b.toString())));
        }
        for (int r = 0; r < model.rowCount(); ++r)
            QCOMPARE(model.rowOfKey(model.row(r).keyText()), r);
        QVERIFY(watched.isValid());
        QCOMPARE(model.row(watched.row()).keyText(), watchedKey);
        QCOMPARE(static_cast<int>(model.stats().total), model.rowCount());
    }

    // Many scattered rows go at once (keys that expired between two scans): moved to the end in one
    // layout change, then removed as one range - no reset, the others keep their order, a
    // selection on a kept row stays on it, one on a removed row goes.
    void scatteredRemovalsKeepOrderAndSelection()
    {
        WatchedModel watched;
        KeyTableModel& model = watched.model;
        KeyFilterProxy& proxy = watched.proxy;
        QSignalSpy& resets = watched.resets;
        QSignalSpy& removals = watched.removals;
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        QVector<KeyRow> rows;
        for (int i = 0; i < 1000; ++i)
            rows.push_back(row(u"r-%1"_qs.arg(i, 4, 10, QLatin1Char('0')), idem::RecordState::Completed, now,
                               1000 + (i * 7919) % 100000));
        model.upsert(rows, now, 1);
        model.sort(KeyTableModel::Ttl, Qt::AscendingOrder);
        const QPersistentModelIndex kept = model.index(500, KeyTableModel::Id);
        const QString keptKey = model.row(500).keyText();
        QString goneKey;
        QVector<KeyRow> seen;
        for (int r = 0; r < model.rowCount(); ++r) {
            if (r % 10 == 3) { // 100 rows in 100 ranges go
                if (r == 503)
                    goneKey = model.row(r).keyText();
                continue;
            }
            seen.push_back(model.row(r));
        }
        const QPersistentModelIndex gone = model.index(503, KeyTableModel::Id);
        model.upsert(seen, now, 2);
        model.finishGeneration(2);

        QCOMPARE(model.rowCount(), 900);
        QCOMPARE(proxy.rowCount(), 900);
        QCOMPARE(resets.count(), 0);
        QCOMPARE(removals.count(), 1); // one range
        QVERIFY(kept.isValid());
        QCOMPARE(model.row(kept.row()).keyText(), keptKey);
        QVERIFY(!gone.isValid());
        QCOMPARE(model.rowOfKey(goneKey), -1);
        for (int r = 0; r < model.rowCount(); ++r) {
            QCOMPARE(model.rowOfKey(model.row(r).keyText()), r);
            if (r > 0)
                QVERIFY(model.row(r - 1).expiresAtMs <= model.row(r).expiresAtMs); // still sorted
        }
        QVERIFY(!model.needsSort());
        // a few ranges still go one by one
        model.removeKeys({model.row(0).keyText(), model.row(1).keyText(), model.row(10).keyText()});
        QCOMPARE(model.rowCount(), 897);
        QCOMPARE(removals.count(), 3);
    }
};

QTEST_MAIN(TestKeyModel)
#include "tst_keymodel.moc"
