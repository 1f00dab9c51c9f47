#include "idem/gateway/listenertls.h"

#include <QEventLoop>
#include <QFile>
#include <QSslCertificate>
#include <QSslKey>
#include <QSslServer>
#include <QSslSocket>
#include <QTimer>

using namespace Qt::StringLiterals;

namespace idem::gateway {

namespace {

bool readFile(const QString& name, const char* flag, QByteArray& into, QString* error) {
    QFile f(name);
    if (!f.open(QIODevice::ReadOnly)) {
        *error =
            QString::fromLatin1(flag) + u" "_s + name + u": cannot read it: "_s + f.errorString();
        return false;
    }
    // a certificate or key is a few KiB: more is not one (/dev/zero, a disk image) and would
    // be read forever
    constexpr qint64 kMax = 1 << 20;
    into = f.read(kMax + 1);
    if (into.size() > kMax) {
        *error = QString::fromLatin1(flag) + u" "_s + name + u": larger than 1MiB: not a PEM file"_s;
        return false;
    }
    return true;
}

// A handshake of the configuration with itself: the server side fails when the key does not
// certify the certificate. Empty when it succeeded, else why not.
QString handshakeWithItself(const QSslConfiguration& server) {
    QSslServer listener;
    listener.setSslConfiguration(server);
    if (!listener.listen(QHostAddress::LocalHost, 0))
        return u"cannot listen on loopback to try the pair: "_s + listener.errorString();
    QEventLoop loop;
    QString serverError;
    QObject::connect(&listener, &QSslServer::errorOccurred, &loop,
                     [&](QSslSocket* s, QAbstractSocket::SocketError) {
                         serverError = s->errorString();
                         loop.quit();
                     });
    QObject::connect(&listener, &QSslServer::pendingConnectionAvailable, &loop, &QEventLoop::quit);
    QSslSocket client;
    client.setPeerVerifyMode(QSslSocket::VerifyNone); // only the pair is tried here, not the chain
    QObject::connect(&client, &QAbstractSocket::errorOccurred, &loop, &QEventLoop::quit);
    QTimer::singleShot(5000, &loop, &QEventLoop::quit);
    client.connectToHostEncrypted(u"127.0.0.1"_s, listener.serverPort());
    loop.exec();
    if (listener.hasPendingConnections())
        return {};
    return serverError.isEmpty() ? u"the TLS handshake with it failed: "_s + client.errorString()
                                 : serverError;
}

} // namespace

bool loadListenerTls(const QString& certFile, const QString& keyFile, QSslConfiguration& out,
                     QString* error) {
    QByteArray certPem, keyPem;
    if (!readFile(certFile, "--listen-cert", certPem, error) ||
        !readFile(keyFile, "--listen-key", keyPem, error))
        return false;
    const QList<QSslCertificate> chain = QSslCertificate::fromData(certPem, QSsl::Pem);
    if (chain.isEmpty() || chain.constFirst().isNull()) {
        *error = u"--listen-cert "_s + certFile + u": no PEM certificate in it"_s;
        return false;
    }
    QSslKey key;
    for (const QSsl::KeyAlgorithm a : {QSsl::Rsa, QSsl::Ec, QSsl::Dsa}) {
        key = QSslKey(keyPem, a, QSsl::Pem, QSsl::PrivateKey);
        if (!key.isNull())
            break;
    }
    if (key.isNull()) {
        *error = u"--listen-key "_s + keyFile +
                 u": no unencrypted PEM private key (RSA, EC or DSA) in it"_s;
        return false;
    }
    QSslConfiguration c = QSslConfiguration::defaultConfiguration();
    c.setLocalCertificateChain(chain);
    c.setPrivateKey(key);
    c.setPeerVerifyMode(QSslSocket::VerifyNone); // clients are not asked for certificates
    if (const QString why = handshakeWithItself(c); !why.isEmpty()) {
        *error = u"--listen-key "_s + keyFile + u" does not go with --listen-cert "_s + certFile +
                 u" ("_s + why.simplified() + u")"_s;
        return false;
    }
    out = c;
    return true;
}

} // namespace idem::gateway
