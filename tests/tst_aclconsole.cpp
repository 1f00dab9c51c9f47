// The console as the users `idemctl acl` makes: a monitor reads everything and is locked read-only
// with words naming the role that may write; an operator reads and purges through the guard, and
// the store's audit stream keeps it.
#include "confirmdialog.h"
#include "elidedlabel.h"
#include "keyfilterproxy.h"
#include "keytablemodel.h"
#include "mainwindow.h"
#include "storeauditview.h"
#include "testsupport.h"

#include "idem/engine/store.h"
#include "idem/redis/pool.h"
#include "idem/redis/reply.h"

#include <QAction>
#include <QApplication>
#include <QDialogButtonBox>
#include <QPushButton>
#include <QLineEdit>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTableWidget>
#include <QTextBrowser>
#include <QTemporaryDir>
#include <QtTest>

using namespace Qt::StringLiterals;

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

// Gives the next confirmation a reason and presses OK.
void confirmWith(const QString& reason)
{
    QTimer::singleShot(0, [=] {
        auto* dialog = qobject_cast<ConfirmDialog*>(QApplication::activeModalWidget());
        if (!dialog)
            return;
        QTest::keyClicks(dialog->findChild<QLineEdit*>(u"reason"_s), reason);
        QTest::mouseClick(dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok), Qt::LeftButton);
        if (dialog->isVisible())
            dialog->reject();
    });
}

void selectKey(MainWindow& w, const QString& key)
{
    const int source = w.model()->rowOfKey(key);
    QVERIFY(source >= 0);
    w.table()->selectionModel()->setCurrentIndex(w.proxy()->mapFromSource(w.model()->index(source, 0)),
                                                 QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

// the store audit view's rows as "who|action|key|why|via"
QStringList shown(StoreAuditView* view)
{
    QStringList out;
    if (!view)
        return out;
    for (int r = 0; r < view->table()->rowCount(); ++r) {
        QStringList cells;
        for (int c : {1, 2, 3, 4, 5})
            cells << (view->table()->item(r, c) ? view->table()->item(r, c)->text() : QString());
        out << cells.join(u'|');
    }
    return out;
}

} // namespace

class TestAclConsole : public QObject {
    Q_OBJECT

    QTemporaryDir m_tmp;
    std::vector<std::string> m_users;

    // `idemctl acl ROLE` applied for `user` on the shared server; the URL that connects as it
    QString makeUser(const QString& role, const std::string& user, const std::string& ns)
    {
        const auto r = idemtest::runIdemctl({u"--namespace"_s, q(ns), u"acl"_s, role, u"--user"_s, q(user),
                                             u"--password-stdin"_s},
                                            30000, QByteArray("pw-") + QByteArray::fromStdString(user) + '\n');
        if (r.exitCode != 0)
            qFatal("idemctl acl %s: %s", qPrintable(role), r.err.constData());
        std::vector<std::string> words;
        for (const QString& w : QString::fromUtf8(r.out).trimmed().split(u' ', Qt::SkipEmptyParts))
            words.push_back(w.toStdString());
        idem::Connection admin(idemtest::sharedRedis());
        const auto reply = admin.command(std::vector<std::string_view>(words.begin(), words.end()));
        if (idem::reply::isError(reply.get()))
            qFatal("ACL SETUSER refused: %s", std::string(idem::reply::errorText(reply.get())).c_str());
        m_users.push_back(user);
        return u"redis://%1:pw-%1@127.0.0.1:%2/0"_s.arg(q(user)).arg(idemtest::sharedRedis().port);
    }

    MainWindow::Options options(const QString& url, const std::string& ns)
    {
        MainWindow::Options o;
        o.connection.url = url;
        o.connection.keyNamespace = q(ns);
        o.auditPath = m_tmp.filePath(q(ns) + u"-audit.jsonl"_s);
        return o;
    }

    static void seed(const std::string& ns)
    {
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns, .lease = idem::Millis(60000)});
        const auto a = store.acquire("done");
        QCOMPARE(store.complete(a.ticket, "ok").status, idem::OwnerStatus::Ok);
        store.acquire("stuck");
    }

private Q_SLOTS:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        idem::setToolName("idem-console"); // as idem-console's main does
    }
    void cleanupTestCase()
    {
        idem::Connection admin(idemtest::sharedRedis());
        for (const auto& u : m_users)
            admin.command({"ACL", "DELUSER", u});
    }

    void monitorIsReadOnlyAndSaysWhichRoleWrites()
    {
        const std::string ns = idemtest::uniqueNamespace("aclcm"), user = "cmon-" + ns;
        seed(ns);
        MainWindow w(options(makeUser(u"monitor"_s, user, ns), ns));
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(w.model()->rowCount(), 2);
        QTRY_VERIFY_WITH_TIMEOUT(w.readOnlyLock().contains(u"operator role"_s), 5000);
        QVERIFY2(w.readOnlyLock().contains(q(user)), qPrintable(w.readOnlyLock()));
        QVERIFY(!w.readOnlyAction()->isEnabled());
        w.table()->selectAll(); // (with nothing selected, purge and force-fail are off whatever else holds)
        QVERIFY(!w.purgeAction()->isEnabled());
        QVERIFY(!w.forceFailAction()->isEnabled());
    }

    // A namespace whose keys this user may not read is not shown as an empty one: the status bar
    // says how many keys were refused
    void keysNotReadableAreSaid()
    {
        const std::string mine = idemtest::uniqueNamespace("aclcr"), other = idemtest::uniqueNamespace("aclcx");
        const std::string user = "crd-" + mine;
        seed(other);
        MainWindow w(options(makeUser(u"operator"_s, user, mine), other));
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(scans.first().first().value<ScanSummary>().refused, 2);
        QCOMPARE(w.model()->rowCount(), 0);
        QTRY_VERIFY_WITH_TIMEOUT(w.findChild<ElidedLabel*>(u"scanState"_s)->text().contains(u"2 key(s) this user may not read"_s), 5000);
    }

    // A service user cannot read what the console shows: said at connect, with the role that can
    void serviceUserIsToldWhichRoleReads()
    {
        const std::string ns = idemtest::uniqueNamespace("aclcs"), user = "csvc-" + ns;
        seed(ns);
        MainWindow w(options(makeUser(u"service"_s, user, ns), ns));
        w.show();
        QTRY_VERIFY_WITH_TIMEOUT(w.findChild<ElidedLabel*>(u"linkState"_s)->text().contains(u"monitor role"_s), 10000);
        QVERIFY(w.findChild<ElidedLabel*>(u"linkState"_s)->text().contains(u"NOPERM"_s));
    }

    void operatorPurgesThroughTheGuard()
    {
        const std::string ns = idemtest::uniqueNamespace("aclco"), user = "cop-" + ns;
        seed(ns);
        MainWindow w(options(makeUser(u"operator"_s, user, ns), ns));
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(w.model()->rowCount(), 2);
        QTest::qWait(300); // the write probe's answer
        QVERIFY2(w.readOnlyLock().isEmpty(), qPrintable(w.readOnlyLock()));
        QVERIFY(!w.isReadOnly());

        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns});
        selectKey(w, q(store.recordKey("done")));
        confirmWith(u"stuck after deploy"_s);
        w.purgeAction()->trigger();
        QVERIFY(actions.wait(5000));
        QVERIFY(!store.inspect("done"));
        const auto audit = store.audit(10);
        QCOMPARE(audit.size(), std::size_t(1));
        QCOMPARE(audit[0].action, std::string("purge"));
        QCOMPARE(audit[0].why, std::string("stuck after deploy"));
        QVERIFY(audit[0].via.starts_with("idem-console@"));
    }

    // Two consoles and idemctl on one store: each console's audit view (Ctrl+L) shows the others'
    // actions as they happen, and the inspector shows a record's last action from its meta key.
    void consolesSeeEachOthersActions()
    {
        const std::string ns = idemtest::uniqueNamespace("aclca");
        seed(ns);
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns, .lease = idem::Millis(60000)});
        const QString url = q(idemtest::sharedRedisUrl());
        MainWindow a(options(url, ns)), b(options(url, ns));
        QSignalSpy scansA(&a, &MainWindow::scanCompleted), scansB(&b, &MainWindow::scanCompleted);
        QSignalSpy actionsA(&a, &MainWindow::actionCompleted);
        a.show();
        b.show();
        QVERIFY(scansA.wait(10000));
        QTRY_VERIFY_WITH_TIMEOUT(!scansB.isEmpty(), 10000);
        b.showAuditTrail();
        a.showAuditTrail();
        QVERIFY(b.storeAuditView());
        QTRY_VERIFY_WITH_TIMEOUT(b.storeAuditView()->status().contains(u"0 action"_s), 5000);

        selectKey(a, q(store.recordKey("done")));
        confirmWith(u"stuck after deploy"_s);
        a.purgeAction()->trigger();
        QVERIFY(actionsA.wait(5000));
        const auto cli = idemtest::runIdemctl({u"--url"_s, url, u"--namespace"_s, q(ns), u"force-fail"_s, u"stuck"_s,
                                               u"--reason"_s, u"poison"_s, u"--by"_s, u"bob"_s});
        QCOMPARE(cli.exitCode, 0);
        const QString key = q(store.recordKey("done")), stuck = q(store.recordKey("stuck"));
        // B's view: A's purge and idemctl's force-fail, newest first, within a poll or two
        QTRY_VERIFY_WITH_TIMEOUT(shown(b.storeAuditView()).size() == 2, 6000);
        const QStringList rows = shown(b.storeAuditView());
        QVERIFY2(rows[0].startsWith(u"bob|force-fail retryable|%1|poison|idemctl@"_s.arg(stuck)), qPrintable(rows.join(u'\n')));
        QVERIFY2(rows[1].contains(u"|purge|%1|stuck after deploy|idem-console@"_s.arg(key)), qPrintable(rows.join(u'\n')));
        QTRY_VERIFY_WITH_TIMEOUT(shown(a.storeAuditView()).size() == 2, 6000); // A sees idemctl's too

        // the id runs again; B's inspector says who purged it before, and why
        store.acquire("done");
        QSignalSpy inspected(&b, &MainWindow::inspected);
        b.refresh();
        QTRY_VERIFY_WITH_TIMEOUT(b.model()->rowOfKey(key) >= 0, 10000);
        selectKey(b, key);
        QTRY_VERIFY_WITH_TIMEOUT(b.inspector()->toPlainText().contains(u"last action"_s), 5000);
        const QString text = b.inspector()->toPlainText();
        QVERIFY2(text.contains(u"purged by"_s) && text.contains(u"stuck after deploy"_s) && text.contains(u"ago"_s),
                 qPrintable(text));
    }
};

QTEST_MAIN(TestAclConsole)
#include "tst_aclconsole.moc"
