// What the console's suites share (tst_console*.cpp): the fixture's records, answering the
// confirmation dialog, selecting rows.
#pragma once

#include "confirmdialog.h"
#include "connectdialog.h"
#include "consoleworker.h"
#include "countschart.h"
#include "elidedlabel.h"
#include "frozentableview.h"
#include "inspectorpanel.h"
#include "keyfilterproxy.h"
#include "keytablemodel.h"
#include "mainwindow.h"
#include "racelabwidget.h"
#include "settings.h"
#include "theme.h"
#include "timelineview.h"
#include "idem/redis/cluster.h"
#include "testsupport.h"

#include "idem/engine/store.h"
#include "idem/errors.h"
#include "idem/monitor/monitor.h"
#include "idem/redis/localserver.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QElapsedTimer>
#include <QFile>
#include <QHeaderView>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalSpy>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QToolButton>
#include <QtTest>

#include <set>

using namespace Qt::StringLiterals;

namespace consoletest {
// A row's state in the key table, or Unknown when the key is not listed.
inline idem::RecordState stateOf(MainWindow& w, const QString& id)
{
    const int r = w.model()->rowOfKey(id);
    return r < 0 ? idem::RecordState::Unknown : w.model()->row(r).state;
}

// Answers the next modal ConfirmDialog: keeps what it says, checks that OK waits for a reason (and,
// for more than one key, for their number typed), gives them, presses OK. A dialog still open
// after that is cancelled, so a test never hangs on it.
inline void answerConfirmation(QString* summary, const QString& reason, bool terminal = false)
{
    QTimer::singleShot(0, [=] {
        auto* dialog = qobject_cast<ConfirmDialog*>(QApplication::activeModalWidget());
        if (!dialog)
            return;
        *summary = dialog->summary();
        auto* ok = dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
        if (ok->isEnabled()) { // must not be enabled before a reason is given
            dialog->reject();
            return;
        }
        QTest::keyClicks(dialog->findChild<QLineEdit*>(u"reason"_s), reason);
        if (auto* typed = dialog->findChild<QLineEdit*>(u"typedCount"_s)) {
            if (ok->isEnabled() || dialog->keyCount() < 2) { // a bulk action needs its size typed
                dialog->reject();
                return;
            }
            QTest::keyClicks(typed, QString::number(dialog->keyCount()));
        }
        if (terminal)
            dialog->findChild<QCheckBox*>(u"terminal"_s)->setChecked(true);
        QTest::mouseClick(ok, Qt::LeftButton);
        if (dialog->isVisible())
            dialog->reject();
    });
}

// Cancels the next modal ConfirmDialog, keeping what it said.
inline void cancelConfirmation(QString* summary, bool* typedCount = nullptr)
{
    QTimer::singleShot(0, [=] {
        if (auto* d = qobject_cast<ConfirmDialog*>(QApplication::activeModalWidget())) {
            *summary = d->summary();
            if (typedCount)
                *typedCount = d->needsTypedCount();
            d->reject();
        }
    });
}

inline void selectStateFilter(MainWindow& w, idem::StateFilter f)
{
    for (int i = 0; i < w.stateBox()->count(); ++i)
        if (w.stateBox()->itemData(i).toInt() == static_cast<int>(f))
            w.stateBox()->setCurrentIndex(i);
}

inline void selectKey(MainWindow& w, const QString& key)
{
    const int source = w.model()->rowOfKey(key);
    QVERIFY(source >= 0);
    const QModelIndex i = w.proxy()->mapFromSource(w.model()->index(source, 0));
    QVERIFY(i.isValid());
    w.table()->selectionModel()->setCurrentIndex(i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

inline ConsoleWorker::Link lastLink(const QSignalSpy& links)
{
    return links.isEmpty() ? ConsoleWorker::Link::Disconnected : links.last().at(0).value<ConsoleWorker::Link>();
}

inline QString linkText(const MainWindow& w) { return w.findChild<ElidedLabel*>(u"linkState"_s)->text(); }

inline QSet<std::string> keysUnder(idem::Connection& c, const std::string& pattern)
{
    QSet<std::string> keys;
    std::string cursor = "0";
    do {
        auto r = c.checked({"SCAN", cursor, "MATCH", pattern, "COUNT", "500"});
        cursor = idem::reply::str(idem::reply::element(r.get(), 0));
        const redisReply* list = idem::reply::element(r.get(), 1);
        for (std::size_t i = 0; i < idem::reply::arraySize(list); ++i)
            keys.insert(idem::reply::str(idem::reply::element(list, i)));
    } while (cursor != "0");
    return keys;
}
} // namespace consoletest

// What every console suite starts from: a namespace of its own on the fixture's server with three
// stale locks, two completed records, one running and one key that is not a record.
class ConsoleTest : public QObject {
protected:
    QTemporaryDir tmp;
    std::unique_ptr<idem::ConnectionPool> pool;
    std::unique_ptr<idem::Store> store;
    std::string ns;

    MainWindow::Options options(bool readOnly = false)
    {
        MainWindow::Options o;
        o.connection.url = QString::fromStdString(idemtest::sharedRedisUrl());
        o.connection.keyNamespace = QString::fromStdString(ns);
        o.readOnly = readOnly;
        o.auditPath = tmp.filePath(QString::fromStdString(ns) + u"-audit.jsonl"_s);
        return o;
    }
    MainWindow::Options optionsFor(const idem::LocalServer& server, const QString& keyNamespace)
    {
        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(server.url());
        o.connection.keyNamespace = keyNamespace;
        return o;
    }
    QString recordKey(const char* id) const { return QString::fromStdString(store->recordKey(id)); }

    void setUpCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        pool = std::make_unique<idem::ConnectionPool>(idemtest::sharedRedis(), 2);
    }

    void setUp()
    {
        ns = idemtest::uniqueNamespace("ui");
        idem::StoreOptions so;
        so.keyNamespace = ns;
        store = std::make_unique<idem::Store>(*pool, so);
        for (const char* id : {"stuck-1", "stuck-2", "stuck-3"})
            store->acquire(id, "", idem::Millis(1));
        for (const char* id : {"done-1", "done-2"}) {
            auto a = store->acquire(id, "");
            store->complete(a.ticket, "{\"ok\":true}");
        }
        store->acquire("running", "", idem::Millis(60000));
        idem::Connection c(idemtest::sharedRedis());
        c.checked({"RPUSH", ns + ":{not-a-record}", "x"});
        QThread::msleep(5);
    }
};

using namespace consoletest;
