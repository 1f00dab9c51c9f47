#pragma once

#include <QSslConfiguration>
#include <QString>

namespace idem::gateway {

// The TLS listener's certificate (with its chain, leaf first) and private key, read from PEM
// files. False with one line in `error` when a file is missing or unreadable, holds no
// certificate or no unencrypted private key, or the key does not belong to the certificate.
// The last is proven the only way Qt offers: a TLS handshake with itself on a loopback port
// (Qt's OpenSSL backend refuses a context whose key does not certify the certificate).
bool loadListenerTls(const QString& certFile, const QString& keyFile, QSslConfiguration& out,
                     QString* error);

} // namespace idem::gateway
