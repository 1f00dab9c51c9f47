// The console's Connect, offscreen, against real servers the tests start with a password or TLS:
// what it remembers per server, where a password is kept and never shown, how its TLS and Sentinel
// fields become the connection's options, and refusals retrying cannot fix (a password, a CA),
// said in words and opening Connect on the field to fix.
#include "consoletest.h"

#include <QCheckBox>
#include <QSettings>

class TestConsoleCredentials : public ConsoleTest {
    Q_OBJECT

private slots:
    void initTestCase() { setUpCase(); }
    void init() { setUp(); }
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

        // PostgreSQL's too (libpq is given it apart: postgresConninfo), in a URI or in key=value pairs
        password->clear();
        url->setCurrentText(u"postgresql://ops:p%40w@127.0.0.1:5432/orders"_s);
        Q_EMIT url->lineEdit()->editingFinished();
        QCOMPARE(url->currentText(), u"postgresql://ops@127.0.0.1:5432/orders"_s);
        QCOMPARE(password->text(), u"p@w"_s);
        password->clear();
        url->setCurrentText(u"host=db password='it\\'s' dbname=app"_s);
        Q_EMIT url->lineEdit()->editingFinished();
        QCOMPARE(url->currentText(), u"host=db  dbname=app"_s);
        QCOMPARE(password->text(), u"it's"_s);
        QCOMPARE(postgresConninfo(u"postgresql://ops@h/orders"_s, u"p@w"_s), u"postgresql://ops@h/orders?password=p%40w"_s);
        QCOMPARE(postgresConninfo(u"postgresql://ops@h/orders?sslmode=require"_s, u"x"_s),
                 u"postgresql://ops@h/orders?sslmode=require&password=x"_s);
        QCOMPARE(postgresConninfo(u"host=db dbname=app"_s, u"it's"_s), u"host=db dbname=app password='it\\'s'"_s);
        QCOMPARE(postgresConninfo(u"postgresql://ops:own@h/orders"_s, u"x"_s), u"postgresql://ops:own@h/orders"_s);

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
};

QTEST_MAIN(TestConsoleCredentials)
#include "tst_consolecredentials.moc"
