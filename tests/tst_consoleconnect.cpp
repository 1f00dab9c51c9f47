// The console's connections, offscreen, against real servers the tests start, kill, pause or lock
// with a password: clusters (every shard, replicas), Connect and what it remembers, a user who may
// not write, what the window shows when the data is not current, refusals retrying cannot fix
// (password, TLS), Sentinel failover, a hung server at close.
#include "consoletest.h"

#include <QCheckBox>
#include <QSettings>

class TestConsoleConnect : public ConsoleTest {
    Q_OBJECT

private slots:
    void initTestCase() { setUpCase(); }
    void init() { setUp(); }

    // given one node of a three-primary cluster the console lists the records of every shard,
    // each with the node it was read from (a Node column, shown only on a cluster)
    void clusterShowsEveryShard()
    {
        {
            MainWindow w(options());
            QSignalSpy scans(&w, &MainWindow::scanCompleted);
            w.show();
            QVERIFY(scans.wait(10000));
            QVERIFY(w.table()->isColumnHidden(KeyTableModel::Node));
        }
        idemtest::LocalCluster cluster(3);
        idem::ConnectionPool pool(cluster.node(0), 1);
        idem::Store cstore(pool, idem::StoreOptions{.keyNamespace = ns});
        std::map<QString, QString> nodeOf; // id -> the primary serving its slot
        for (int i = 0; i < 90; ++i) {
            const std::string id = "c-" + std::to_string(i);
            QCOMPARE(cstore.acquire(id, "").status, idem::AcquireStatus::Acquired);
            const int slot = idem::hashSlot(cstore.recordKey(id));
            for (const auto& shard : [&] {
                     idem::Connection c(cluster.node(0));
                     return idem::clusterShards(c);
                 }())
                for (const auto& [first, last] : shard.ranges)
                    if (slot >= first && slot <= last)
                        nodeOf[QString::fromStdString(id)] = QString::fromStdString(shard.primary);
        }
        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(cluster.url(1));
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QTRY_COMPARE(w.model()->rowCount(), 90);
        QVERIFY(!w.table()->isColumnHidden(KeyTableModel::Node));
        QSet<QString> nodes;
        for (int r = 0; r < w.model()->rowCount(); ++r) {
            const QString id = w.model()->data(w.model()->index(r, KeyTableModel::Id)).toString();
            const QString node = w.model()->data(w.model()->index(r, KeyTableModel::Node)).toString();
            QCOMPARE(node, nodeOf[id]);
            nodes.insert(node);
        }
        QCOMPARE(nodes.size(), 3);
    }

    // "Read keys from: Replicas" on a cluster with a replica per primary: every record is read from
    // a replica (the Node column names replicas only), and a purge still reaches the primaries
    void clusterReadFromReplicas()
    {
        idemtest::LocalCluster cluster(3, 3);
        idem::ConnectionPool pool(cluster.node(0), 1);
        idem::Store cstore(pool, idem::StoreOptions{.keyNamespace = ns});
        for (int i = 0; i < 60; ++i) {
            auto a = cstore.acquire("r-" + std::to_string(i), "");
            cstore.complete(a.ticket, "ok");
        }
        cluster.waitForReplication();
        std::set<QString> primaries, replicas;
        {
            idem::Connection c(cluster.node(0));
            for (const auto& shard : idem::clusterShards(c)) {
                primaries.insert(QString::fromStdString(shard.primary));
                for (const auto& r : shard.replicas)
                    replicas.insert(QString::fromStdString(r));
            }
        }
        QCOMPARE(replicas.size(), std::size_t(3));

        ConnectDialog dialog(nullptr); // the choice in Connect becomes the setting
        qobject_cast<QComboBox*>(dialog.fieldWidget(u"read-from"_s))->setCurrentIndex(1);
        QVERIFY(dialog.settings().readFromReplicas);

        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(cluster.url(0));
        o.connection.readFromReplicas = dialog.settings().readFromReplicas;
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 60, 5000);
        std::set<QString> readFrom;
        for (int r = 0; r < w.model()->rowCount(); ++r)
            readFrom.insert(w.model()->data(w.model()->index(r, KeyTableModel::Node)).toString());
        QVERIFY2(readFrom == replicas, qPrintable(QStringList(readFrom.begin(), readFrom.end()).join(u' ')));

        QTest::keyClicks(w.filterEdit(), u"r-7"_s);
        QCOMPARE(w.proxy()->rowCount(), 1);
        w.table()->selectAll();
        QString summary;
        answerConfirmation(&summary, u"run it again"_s);
        w.purgeAction()->trigger();
        QVERIFY(actions.wait(10000));
        QCOMPARE(actions.last().at(0).value<ActionResult>().changed, 1);
        QVERIFY(!cstore.inspect("r-7"));                     // gone from its primary
        QCOMPARE(cstore.inspect("r-8")->state, idem::RecordState::Completed); // and nothing else
    }

    // a recent URL brings back the TLS files, namespace and read-from it was connected with, never
    // a password or "insecure"
    void connectRemembersARecentUrlsSettings()
    {
        ConnectionSettings s;
        s.url = u"rediss://10.1.2.3:6380/0"_s;
        s.user = u"ops"_s;
        s.password = u"secret"_s;
        s.keyNamespace = u"payments"_s;
        s.readFromReplicas = true;
        s.tlsCa = u"ca.pem"_s;
        s.tlsCert = u"client.pem"_s;
        s.tlsKey = u"client.key"_s;
        s.tlsServerName = u"redis.internal"_s;
        s.tlsInsecure = true;
        Settings::instance().addRecentUrl(s.url);
        Settings::instance().rememberConnection(s.url, s);

        ConnectDialog dialog(nullptr); // opens on the most recent URL, with its settings
        auto* url = qobject_cast<QComboBox*>(dialog.fieldWidget(u"url"_s));
        QCOMPARE(url->currentText(), s.url);
        QCOMPARE(dialog.settings().tlsCa, s.tlsCa);
        qobject_cast<QLineEdit*>(dialog.fieldWidget(u"tls-ca"_s))->clear();
        url->setCurrentText(u"redis://127.0.0.1:1/0"_s); // another URL, then back to the recent one
        url->setCurrentText(s.url);
        const ConnectionSettings back = dialog.settings();
        QCOMPARE(back.user, s.user);
        QCOMPARE(back.keyNamespace, s.keyNamespace);
        QVERIFY(back.readFromReplicas);
        QCOMPARE(back.tlsCa, s.tlsCa);
        QCOMPARE(back.tlsCert, s.tlsCert);
        QCOMPARE(back.tlsKey, s.tlsKey);
        QCOMPARE(back.tlsServerName, s.tlsServerName);
        QVERIFY(back.password.isEmpty());
        QVERIFY(!back.tlsInsecure);
    }

    // A password the keychain filled in belongs to its account: moving to another server takes it
    // back and unticks "keep" (it is neither sent there nor saved for it); a password typed into
    // the URL replaces it and is kept only if the user ticks the box. What the user typed or
    // ticked stays theirs.
    void aKeptPasswordStaysWithItsServer()
    {
        QSettings().remove(u"connection/recent"_s); // no remembered profile for these URLs
        ConnectDialog dialog(nullptr);
        auto* url = qobject_cast<QComboBox*>(dialog.fieldWidget(u"url"_s));
        auto* password = qobject_cast<QLineEdit*>(dialog.fieldWidget(u"password"_s));
        auto* keep = dialog.findChild<QCheckBox*>(u"remember"_s);
        QVERIFY(keep && !keep->isChecked());
        const QString a = u"redis://ops@127.0.0.1:6390/0"_s, b = u"redis://ops@127.0.0.1:6391/0"_s;
        url->setCurrentText(a);
        dialog.keychainAnswered(b, u"late"_s); // an answer for a URL no longer in the field
        QVERIFY(password->text().isEmpty());
        dialog.keychainAnswered(a, u"kept"_s);
        QCOMPARE(password->text(), u"kept"_s);
        QVERIFY(keep->isChecked());
        url->setCurrentText(b);
        QVERIFY(password->text().isEmpty());
        QVERIFY(!keep->isChecked());
        QVERIFY(!dialog.rememberPassword());

        // a password typed into the URL of the same account replaces the kept one (and is kept in
        // its place while the box stays ticked); moved to another server, it stays, the tick goes
        url->setCurrentText(a);
        dialog.keychainAnswered(a, u"kept"_s);
        url->setCurrentText(u"redis://ops:typed@127.0.0.1:6390/0"_s);
        Q_EMIT url->lineEdit()->editingFinished();
        QCOMPARE(url->currentText(), a);
        QCOMPARE(password->text(), u"typed"_s);
        QVERIFY(keep->isChecked());
        url->setCurrentText(u"redis://ops:typed@127.0.0.1:6391/0"_s);
        Q_EMIT url->lineEdit()->editingFinished();
        QCOMPARE(url->currentText(), b);
        QCOMPARE(password->text(), u"typed"_s);
        QVERIFY(!keep->isChecked());

        // filled twice for one account (the field cleared in between): the tick is still the fill's
        url->setCurrentText(a);
        password->clear();
        dialog.keychainAnswered(a, u"kept"_s);
        password->clear();
        url->setCurrentText(u"redis://ops@127.0.0.1:6390"_s); // the same account, spelt otherwise
        dialog.keychainAnswered(u"redis://ops@127.0.0.1:6390"_s, u"kept"_s);
        QCOMPARE(password->text(), u"kept"_s);
        url->setCurrentText(b);
        QVERIFY(password->text().isEmpty());
        QVERIFY(!keep->isChecked());

        // typed into the field after the fill, ticked by the user: theirs, kept across a move
        url->setCurrentText(a);
        dialog.keychainAnswered(a, u"kept"_s);
        QVERIFY(keep->isChecked());
        password->setText(u"mine"_s);
        keep->click();
        keep->click(); // unticked and ticked again by hand
        QVERIFY(keep->isChecked());
        url->setCurrentText(b);
        QCOMPARE(password->text(), u"mine"_s);
        QVERIFY(keep->isChecked());
    }

    // A password typed into a Redis URL moves to the masked Password field when the URL is left,
    // on OK, and when Connect opens on such a URL; only the password is cut out, the rest stays as
    // typed. A PostgreSQL URL keeps its own (libpq reads it there). Whatever cannot be read is
    // shown and remembered with whatever could be a password cut out.
    void aPasswordInTheUrlIsNeverShown()
    {
        QSettings().remove(u"connection/recent"_s); // the list this test reads is its own
        ConnectDialog dialog(nullptr);
        auto* url = qobject_cast<QComboBox*>(dialog.fieldWidget(u"url"_s));
        auto* password = qobject_cast<QLineEdit*>(dialog.fieldWidget(u"password"_s));
        url->setCurrentText(u"redis://ops:s%40cret@127.0.0.1:6390/2"_s);
        Q_EMIT url->lineEdit()->editingFinished();
        QCOMPARE(url->currentText(), u"redis://ops@127.0.0.1:6390/2"_s);
        QCOMPARE(password->text(), u"s@cret"_s);
        QCOMPARE(password->echoMode(), QLineEdit::Password);
        QCOMPARE(dialog.settings().password, u"s@cret"_s);
        QCOMPARE(idem::ConnectionOptions::fromUrl(dialog.settings().url.toStdString()).user, std::string("ops"));
        // half typed (no port yet), a '/' in the password: the rest is left as it was typed
        url->setCurrentText(u"redis://:s3cr/et@cache"_s);
        Q_EMIT url->lineEdit()->editingFinished();
        QCOMPARE(url->currentText(), u"redis://cache"_s);
        QCOMPARE(password->text(), u"s3cr/et"_s);
        // Return in the field adds nothing to the list
        url->setCurrentText(u"redis://:hunter2@127.0.0.1:6392/0"_s);
        QTest::keyClick(url->lineEdit(), Qt::Key_Return);
        for (int i = 0; i < url->count(); ++i)
            QVERIFY2(!url->itemText(i).contains(u"hunter2"_s), qPrintable(url->itemText(i)));

        ConnectionSettings given;
        given.url = u"redis-sentinel://:hunter2@127.0.0.1:26379,127.0.0.1:26380/0#mymaster"_s;
        given.keyNamespace = u"ns"_s;
        dialog.setSettings(given);
        QCOMPARE(url->currentText(), u"redis-sentinel://127.0.0.1:26379,127.0.0.1:26380/0#mymaster"_s);
        QCOMPARE(dialog.settings().password, u"hunter2"_s);

        const QString pg = u"postgresql://ops:pw@127.0.0.1:5432/orders"_s;
        password->clear();
        url->setCurrentText(pg);
        Q_EMIT url->lineEdit()->editingFinished();
        QCOMPARE(url->currentText(), pg);
        QVERIFY(password->text().isEmpty());

        // what the recent list, the keychain and the title get
        QCOMPARE(shownUrl(u"redis://ops:pw@h:1"_s), u"redis://ops@h:1/0"_s);
        QCOMPARE(shownUrl(u"redis://ops:hunter2@h:99999/0"_s), u"redis://ops@h:99999/0"_s); // unreadable
        QCOMPARE(shownUrl(u"postgresql://ops:hunter2@h/db"_s), u"postgresql://ops@h/db"_s);
        for (const QString& bad : {u" redis://ops:hunter2@h:99999"_s, u"redis:/ops:hunter2@h"_s, u"ops:hunter2@h:1"_s,
                                   u"redis://ops:hun\nter2@h:x"_s, u"redis://:a@hunter2@h:x"_s})
            QVERIFY2(!shownUrl(bad).contains(u"hunter2"_s) && !shownUrl(bad).contains(u"hun"_s), qPrintable(bad));

        idem::LocalServer server;
        MainWindow w(optionsFor(server, u"pwurl"_s));
        w.show();
        w.openConnectDialog();
        QTRY_VERIFY_WITH_TIMEOUT(w.connectDialog() && w.connectDialog()->isVisible(), 3000);
        auto* bad = qobject_cast<QComboBox*>(w.connectDialog()->fieldWidget(u"url"_s));
        bad->setCurrentText(u"redis://ops:hunter2@127.0.0.1:99999/0"_s); // no such port: unreadable
        w.connectDialog()->accept();
        const QStringList recent = Settings::instance().recentUrls();
        QVERIFY(!recent.isEmpty());
        QCOMPARE(recent.first(), u"redis://ops@127.0.0.1:99999/0"_s);
        QVERIFY2(!w.windowTitle().contains(u"hunter2"_s), qPrintable(w.windowTitle()));
        QTRY_VERIFY_WITH_TIMEOUT(w.bannerText().contains(u"99999"_s), 5000);
        QVERIFY2(!w.bannerText().contains(u"hunter2"_s), qPrintable(w.bannerText()));
    }

    // A user whose ACL forbids writes: the console says so and stays read-only, toggle and all
    void userWithoutWritePermissionIsReadOnly()
    {
        idem::LocalServer server;
        idem::Connection admin(server.connectionOptions());
        admin.checked({"ACL", "SETUSER", "viewer", "on", ">look", "~*", "&*", "+@all", "-@write"});
        admin.checked({"HSET", "ro:{a}", "state", "COMPLETED", "token", "t", "fence", "1"});
        MainWindow::Options o = optionsFor(server, u"ro"_s);
        o.connection.url = u"redis://viewer:look@127.0.0.1:%1/0"_s.arg(server.port());
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(w.model()->rowCount(), 1);
        QTRY_VERIFY_WITH_TIMEOUT(w.readOnlyLock().contains(u"NOPERM"_s), 5000);
        QVERIFY(w.isReadOnly() || !w.readOnlyLock().isEmpty());
        QVERIFY(!w.readOnlyAction()->isEnabled());
        QVERIFY(w.readOnlyAction()->isChecked());
        QVERIFY(!w.purgeAction()->isEnabled());
        QVERIFY(w.readOnlyAction()->toolTip().contains(u"viewer"_s));
    }

    // Redis killed while connected: at once a banner says since when and how old the data is; the
    // counters and rows turn grey, countdowns stop, the chart leaves a gap, the actions and the
    // inspector's buttons are off, and force-fail asks nothing. When the server is back the data
    // is read again and the inspector re-reads its record.
    void disconnectedStateDisablesActionsAndMarksDataStale()
    {
        idem::LocalServer server;
        idem::ConnectionPool p(server.connectionOptions(), 1);
        idem::StoreOptions so;
        so.keyNamespace = "dc";
        idem::Store s(p, so);
        s.acquire("held", "", idem::Millis(600'000));
        s.acquire("stuck", "", idem::Millis(1));
        MainWindow w(optionsFor(server, u"dc"_s));
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy inspected(&w, &MainWindow::inspected);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(w.model()->rowCount(), 2);
        selectKey(w, u"dc:{held}"_s);
        QVERIFY(inspected.wait(5000));
        QVERIFY(w.inspectorPanel()->forceFailButton()->isEnabled());
        QTRY_VERIFY_WITH_TIMEOUT(w.chart()->sampleCount() >= 1, 5000);

        server.kill();
        // the heartbeat notices within its interval, not at the next scan
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::AsOf, ConsoleWorker::kHeartbeatMs + 3000);
        QVERIFY(w.banner()->isVisible());
        QVERIFY2(w.bannerText().contains(u"lost at"_s) && w.bannerText().contains(u"as of"_s),
                 qPrintable(w.bannerText()));
        for (QAction* a : {w.purgeAction(), w.forceFailAction(), w.purgeAllAction(), w.forceFailAllAction()})
            QVERIFY(!a->isEnabled());
        QVERIFY(!w.inspectorPanel()->forceFailButton()->isEnabled());
        QVERIFY(w.inspectorPanel()->findChild<QLabel*>(u"inspectorStale"_s)->isVisible());
        QVERIFY(w.model()->isFrozen());
        const int held = w.model()->rowOfKey(u"dc:{held}"_s);
        const QString ttl = w.model()->data(w.model()->index(held, KeyTableModel::Ttl)).toString();
        const QString lease = w.model()->data(w.model()->index(held, KeyTableModel::Lease)).toString();
        QTest::qWait(1300);
        QCOMPARE(w.model()->data(w.model()->index(held, KeyTableModel::Ttl)).toString(), ttl); // stopped
        QCOMPARE(w.model()->data(w.model()->index(held, KeyTableModel::Lease)).toString(), lease);
        QCOMPARE(w.model()->data(w.model()->index(held, 0), Qt::ForegroundRole).value<QColor>(),
                 theme::staleText(QApplication::palette()));
        QVERIFY(w.counter(0)->text().contains(u"2"_s)); // the last counts, greyed: not a dash, not zero
        QCOMPARE(w.counter(0)->palette().color(QPalette::ButtonText), theme::staleText(w.palette()));
        w.table()->selectAll();
        w.forceFailSelected(); // no dialog: it says at once that it cannot
        QVERIFY(!QApplication::activeModalWidget());
        QVERIFY(w.statusBar()->currentMessage().contains(u"Not connected"_s));
        QCOMPARE(w.findChild<ElidedLabel*>(u"liveUpdates"_s)->text(), u"no live updates"_s);
        QTest::qWait(2200); // the chart records the outage
        const int before = inspected.count();

        server.start(); // same port; the data is gone (no persistence), the console follows
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 20000);
        QVERIFY(!w.banner()->isVisible());
        QVERIFY(!w.model()->isFrozen());
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 0, 5000);
        QTRY_VERIFY_WITH_TIMEOUT(inspected.count() > before, 5000); // read again: now it is gone
        QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(u"gone"_s), 5000);
        QTRY_COMPARE_WITH_TIMEOUT(w.chart()->segmentCount(), 2, 5000); // a gap for the outage
    }

    // A server that cannot be reached, never connected: "—" everywhere, not an empty healthy store
    void neverConnectedShowsNoData()
    {
        const idemtest::ClosedPort closed;
        MainWindow::Options o = options();
        o.connection.url = u"redis://127.0.0.1:%1/0"_s.arg(closed.port());
        MainWindow w(o);
        QSignalSpy links(&w, &MainWindow::linkStateChanged);
        w.show();
        QTRY_VERIFY_WITH_TIMEOUT(!links.isEmpty() && links.last().at(0).value<ConsoleWorker::Link>() ==
                                                         ConsoleWorker::Link::Retrying,
                                 5000);
        QCOMPARE(w.freshness(), MainWindow::Freshness::NoData);
        for (int i = 0; i < 11; ++i)
            QVERIFY2(w.counter(i)->text().endsWith(u"—"_s), qPrintable(w.counter(i)->text()));
        QVERIFY2(w.bannerText().contains(u"Cannot reach"_s), qPrintable(w.bannerText()));
        QVERIFY(!w.purgeAction()->isEnabled());
        QTest::qWait(2100);
        QCOMPARE(w.chart()->sampleCount(), 0); // no line at zero
        QVERIFY(w.findChild<QWidget*>(u"bannerConnect"_s)->isVisible());
    }

    // A server that wants a password, given none: no retries, the reason in words in the banner,
    // and Connect opens with the password field marked. With the password given there, it connects.
    void refusedPasswordStopsRetriesAndOpensConnect()
    {
        idem::LocalServerOptions lo;
        lo.extraArgs = {"--requirepass", "s3cret"};
        idem::LocalServer server(lo);
        MainWindow w(optionsFor(server, u"pw"_s));
        QSignalSpy links(&w, &MainWindow::linkStateChanged);
        w.show();
        QTRY_VERIFY_WITH_TIMEOUT(!links.isEmpty() && links.last().at(0).value<ConsoleWorker::Link>() ==
                                                         ConsoleWorker::Link::Refused,
                                 5000);
        QVERIFY2(w.bannerText().contains(u"needs a password, and none was given"_s), qPrintable(w.bannerText()));
        QVERIFY2(w.bannerText().contains(u"Connect"_s), qPrintable(w.bannerText()));
        QCOMPARE(w.freshness(), MainWindow::Freshness::NoData);
        QTRY_VERIFY_WITH_TIMEOUT(w.connectDialog() && w.connectDialog()->isVisible(), 3000);
        QWidget* field = w.connectDialog()->fieldWidget(u"password"_s);
        QVERIFY(field->property("needsFix").toBool());
        QVERIFY(!w.connectDialog()->fieldWidget(u"url"_s)->property("needsFix").toBool());
        QVERIFY(w.connectDialog()->findChild<QLabel*>(u"problem"_s)->text().contains(u"password"_s));
        const qsizetype changes = links.size();
        QTest::qWait(2500); // retrying stopped: nothing more happens
        QCOMPARE(links.size(), changes);

        qobject_cast<QLineEdit*>(field)->setText(u"s3cret"_s);
        w.connectDialog()->accept();
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);

        // a wrong one in the URL: refused too, in other words
        MainWindow::Options o = optionsFor(server, u"pw"_s);
        o.connection.url = u"redis://:wrong@127.0.0.1:%1/0"_s.arg(server.port());
        MainWindow w2(o);
        QSignalSpy links2(&w2, &MainWindow::linkStateChanged);
        w2.show();
        QTRY_VERIFY_WITH_TIMEOUT(!links2.isEmpty() && links2.last().at(0).value<ConsoleWorker::Link>() ==
                                                          ConsoleWorker::Link::Refused,
                                 5000);
        QVERIFY2(w2.bannerText().contains(u"refused the user name or password"_s), qPrintable(w2.bannerText()));
        QTRY_VERIFY_WITH_TIMEOUT(w2.connectDialog(), 3000);
        QVERIFY(w2.connectDialog()->fieldWidget(u"password"_s)->property("needsFix").toBool());
    }

    // Connect's TLS fields and the Sentinel password become the connection's options, for the URLs
    // they fit; what does not fit is refused with the field named, before anything is tried
    void connectDialogMapsTlsAndSentinelSettings()
    {
        ConnectDialog dialog(nullptr);
        ConnectionSettings given;
        given.url = u"rediss://127.0.0.1:6380/2"_s;
        given.tlsCa = u"ca.pem"_s;
        given.tlsCert = u"client.pem"_s;
        given.tlsKey = u"client.key"_s;
        given.tlsServerName = u"redis.internal"_s;
        given.tlsInsecure = true;
        dialog.setSettings(given);
        QVERIFY(dialog.fieldWidget(u"tls-ca"_s)->isEnabled());
        QVERIFY(!dialog.fieldWidget(u"sentinel-password"_s)->isEnabled());
        QVERIFY(dialog.findChild<QWidget*>(u"tls-ca-pick"_s)); // a file picker beside each file
        QVERIFY(dialog.findChild<QWidget*>(u"tls-key-pick"_s));
        ConnectionSettings s = dialog.settings();
        idem::ConnectionOptions o = connectionOptions(s);
        QVERIFY(o.tls.enabled);
        QCOMPARE(o.tls.caFile, std::string("ca.pem"));
        QCOMPARE(o.tls.certFile, std::string("client.pem"));
        QCOMPARE(o.tls.keyFile, std::string("client.key"));
        QCOMPARE(o.tls.serverName, std::string("redis.internal"));
        QVERIFY(o.tls.insecure);
        QCOMPARE(o.db, 2);

        // a plaintext URL: the TLS fields are greyed out and not used
        qobject_cast<QComboBox*>(dialog.fieldWidget(u"url"_s))->setCurrentText(u"redis://127.0.0.1:6379/0"_s);
        QVERIFY(!dialog.fieldWidget(u"tls-ca"_s)->isEnabled());
        QVERIFY(!dialog.fieldWidget(u"tls-insecure"_s)->isEnabled());
        s = dialog.settings();
        QVERIFY(s.tlsCa.isEmpty() && !s.tlsInsecure);
        QVERIFY(!connectionOptions(s).tls.enabled);

        // Sentinel: the sentinels' password for redis-sentinel:// and rediss-sentinel:// URLs
        qobject_cast<QComboBox*>(dialog.fieldWidget(u"url"_s))
            ->setCurrentText(u"rediss-sentinel://:pw@127.0.0.1:26379,127.0.0.1:26380/0#mymaster"_s);
        QVERIFY(dialog.fieldWidget(u"sentinel-password"_s)->isEnabled());
        QVERIFY(dialog.fieldWidget(u"tls-ca"_s)->isEnabled());
        qobject_cast<QLineEdit*>(dialog.fieldWidget(u"sentinel-password"_s))->setText(u"sentinel-pw"_s);
        o = connectionOptions(dialog.settings());
        QVERIFY(o.viaSentinel() && o.tls.enabled);
        QCOMPARE(o.sentinel.nodes.size(), std::size_t(2));
        QCOMPARE(o.sentinel.master, std::string("mymaster"));
        QCOMPARE(o.sentinel.password, std::string("sentinel-pw"));
        QCOMPARE(o.password, std::string("pw"));

        // settings that do not fit the URL name the field to change
        ConnectionSettings wrong;
        wrong.url = u"redis://127.0.0.1:6379/0"_s;
        wrong.tlsCa = u"ca.pem"_s;
        try {
            (void)connectionOptions(wrong);
            QFAIL("a CA file for a plaintext URL was taken");
        } catch (const idem::ConfigError& e) {
            QCOMPARE(e.field(), std::string("tls-ca"));
        }
        wrong.tlsCa.clear();
        wrong.sentinelPassword = u"x"_s;
        try {
            (void)connectionOptions(wrong);
            QFAIL("a Sentinel password for a plain URL was taken");
        } catch (const idem::ConfigError& e) {
            QCOMPARE(e.field(), std::string("sentinel-password"));
        }
    }

    // A TLS-only server whose CA the console is not given: no retries, the reason in words, and
    // Connect opens with the CA file marked; with the CA file chosen there, it connects.
    void tlsRefusalOpensConnectOnTheCaFile()
    {
        const idemtest::TestCerts& certs = idemtest::TestCerts::get();
        idem::LocalServer server(certs.serverOptions());
        MainWindow w(optionsFor(server, u"tls"_s));
        QVERIFY(server.url().starts_with("rediss://"));
        QSignalSpy links(&w, &MainWindow::linkStateChanged);
        w.show();
        QTRY_VERIFY_WITH_TIMEOUT(lastLink(links) == ConsoleWorker::Link::Refused, 5000);
        QVERIFY2(w.bannerText().contains(u"TLS connection"_s) && w.bannerText().contains(u"CA file"_s),
                 qPrintable(w.bannerText()));
        QTRY_VERIFY_WITH_TIMEOUT(w.connectDialog() && w.connectDialog()->isVisible(), 3000);
        QWidget* ca = w.connectDialog()->fieldWidget(u"tls-ca"_s);
        QVERIFY(ca->property("needsFix").toBool());
        QVERIFY(ca->isEnabled());
        QVERIFY(!w.connectDialog()->fieldWidget(u"url"_s)->property("needsFix").toBool());
        const qsizetype changes = links.size();
        QTest::qWait(2500); // retrying stopped
        QCOMPARE(links.size(), changes);
        QVERIFY(!w.findChild<QLabel*>(u"insecureTls"_s)->isVisible());

        // redis:// to a TLS port: the URL is what to correct
        MainWindow::Options plain = optionsFor(server, u"tls"_s);
        plain.connection.url = u"redis://127.0.0.1:%1/0"_s.arg(server.port());
        MainWindow w0(plain);
        QSignalSpy links0(&w0, &MainWindow::linkStateChanged);
        w0.show();
        QTRY_VERIFY_WITH_TIMEOUT(lastLink(links0) == ConsoleWorker::Link::Refused, 8000);
        QVERIFY2(w0.bannerText().contains(u"do not agree on TLS"_s), qPrintable(w0.bannerText()));
        QTRY_VERIFY_WITH_TIMEOUT(w0.connectDialog(), 3000);
        QVERIFY(w0.connectDialog()->fieldWidget(u"url"_s)->property("needsFix").toBool());

        qobject_cast<QLineEdit*>(ca)->setText(QString::fromStdString(certs.path("ca.pem")));
        w.connectDialog()->accept();
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);
        QVERIFY(!w.windowTitle().contains(u"NOT VERIFIED"_s));

        // a server that wants a client certificate, given none: the certificate is the field
        idem::LocalServer mutual(certs.serverOptions("server.pem", true));
        MainWindow::Options o = optionsFor(mutual, u"tls"_s);
        o.connection.tlsCa = QString::fromStdString(certs.path("ca.pem"));
        MainWindow w2(o);
        QSignalSpy links2(&w2, &MainWindow::linkStateChanged);
        w2.show();
        QTRY_VERIFY_WITH_TIMEOUT(lastLink(links2) == ConsoleWorker::Link::Refused, 5000);
        QTRY_VERIFY_WITH_TIMEOUT(w2.connectDialog(), 3000);
        QVERIFY2(w2.connectDialog()->fieldWidget(u"tls-cert"_s)->property("needsFix").toBool(),
                 qPrintable(w2.bannerText()));
        o.connection.tlsCert = QString::fromStdString(certs.path("client.pem"));
        o.connection.tlsKey = QString::fromStdString(certs.path("client.key"));
        MainWindow w3(o);
        w3.show();
        QTRY_COMPARE_WITH_TIMEOUT(w3.freshness(), MainWindow::Freshness::Live, 10000);
    }

    // No verification: it connects to a server whose certificate nothing vouches for, and says
    // so in the title (first, where it is not cut off) and in the status bar
    void insecureTlsIsAWarningInTitleAndStatusBar()
    {
        const idemtest::TestCerts& certs = idemtest::TestCerts::get();
        idem::LocalServer server(certs.serverOptions("other-server.pem"));
        MainWindow::Options o = optionsFor(server, u"tls"_s);
        o.connection.tlsInsecure = true;
        MainWindow w(o);
        w.show();
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);
        QVERIFY2(w.windowTitle().startsWith(u"⚠ TLS NOT VERIFIED"_s), qPrintable(w.windowTitle()));
        auto* label = w.findChild<QLabel*>(u"insecureTls"_s);
        QVERIFY(label->isVisible());
        QVERIFY(label->text().contains(u"not verified"_s));
        QVERIFY(w.statusBar()->isAncestorOf(label));

        // connecting elsewhere without it: the warning goes
        w.connectTo(optionsFor(server, u"tls"_s).connection);
        QVERIFY(!label->isVisible());
        QVERIFY(!w.windowTitle().contains(u"NOT VERIFIED"_s));
    }

    // Through Sentinel: the status bar names the primary. A primary demoted by SENTINEL FAILOVER
    // goes on answering reads: the console notices it from the sentinels and names the new one.
    // A primary that dies: "failing over", then the new primary, without a restart or a click.
    void sentinelFailoverIsSaidAndTheNewPrimaryNamed()
    {
        idemtest::LocalSentinelSet set(2);
        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(set.url());
        MainWindow w(o);
        QSignalSpy links(&w, &MainWindow::linkStateChanged);
        w.show();
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);
        const auto primary = [&](int node) { return u"primary 127.0.0.1:%1"_s.arg(set.node(node).port()); };
        QVERIFY2(linkText(w).contains(primary(0)), qPrintable(linkText(w)));

        idem::Connection(set.sentinel(0).connectionOptions()).checked({"SENTINEL", "FAILOVER", "mymaster"});
        const int promoted = set.waitForNewPrimary(0);
        QTRY_VERIFY2_WITH_TIMEOUT(linkText(w).contains(primary(promoted)), qPrintable(linkText(w)), 15000);
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);
        set.waitForReplicas(2);

        set.node(promoted).kill();
        QTRY_VERIFY_WITH_TIMEOUT(linkText(w).contains(u"failing over"_s), 5000);
        QVERIFY2(linkText(w).contains(primary(promoted) + u" lost"_s), qPrintable(linkText(w)));
        QVERIFY2(w.bannerText().contains(u"failing over"_s), qPrintable(w.bannerText()));
        QVERIFY(!w.purgeAction()->isEnabled());
        const int third = set.waitForNewPrimary(promoted);
        QTRY_VERIFY2_WITH_TIMEOUT(linkText(w).contains(primary(third)), qPrintable(linkText(w)), 20000);
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);
        for (const auto& change : links) // a failover is never taken for a refusal
            QVERIFY(change.at(0).value<ConsoleWorker::Link>() != ConsoleWorker::Link::Refused);
    }

    // Closing the console while Redis hangs (SIGSTOP) and the worker waits on it: the window goes
    // at once; before, the destructor waited for the worker's 3 s command timeout.
    void closesAtOnceWhenRedisHangs()
    {
        idem::LocalServer server;
        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(server.url());
        o.connection.rescanIntervalMs = 60000;
        auto w = std::make_unique<MainWindow>(o);
        QSignalSpy scans(w.get(), &MainWindow::scanCompleted);
        w->show();
        QVERIFY(scans.wait(10000));
        server.pause();
        w->refresh(); // the worker now blocks on the paused server
        QTest::qWait(300);
        QElapsedTimer closing;
        closing.start();
        w.reset();
        const qint64 ms = closing.elapsed();
        server.resume();
        QVERIFY2(ms < 1500, qPrintable(u"closing took %1 ms"_s.arg(ms)));
    }
};

QTEST_MAIN(TestConsoleConnect)
#include "tst_consoleconnect.moc"
