// What the idemctl suites share (tst_idemctl*.cpp): idemctl run as a process against the
// fixture's redis-server, each test in a namespace of its own.
#pragma once

#include "testsupport.h"

#include <QTemporaryDir>
#include <QtTest>

class IdemctlTest : public QObject {
protected:
    static QString s(const char* text) { return QString::fromUtf8(text); }

    QStringList common;
    QTemporaryDir tmp;

    idemtest::ProcessResult ctl(QStringList args, int timeoutMs = 30000)
    {
        return idemtest::runIdemctl(common + args, timeoutMs);
    }
    idemtest::ProcessResult run(const QString& key, QStringList cmd, QStringList opts = {})
    {
        return ctl(QStringList{s("run"), s("--key"), key} + opts + QStringList{s("--")} + cmd);
    }
    static void oneLineError(const idemtest::ProcessResult& r)
    {
        const QByteArray e = r.err.trimmed();
        QVERIFY2(!e.isEmpty(), "an error must be reported");
        QVERIFY2(!e.contains('\n'), e.constData());
    }

    void setUp()
    {
        common = {s("--url"), QString::fromStdString(idemtest::sharedRedisUrl()), s("--namespace"),
                  QString::fromStdString(idemtest::uniqueNamespace("cli"))};
    }
};
