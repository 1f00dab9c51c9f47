#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>

#include <string>

// Starts the idem-gateway next to this program in front of `upstreamPort`, on `redisUrl`, and
// returns the port it listens on (0 when it did not start; why is printed).
quint16 startGateway(QProcess& gateway, quint16 upstreamPort, const std::string& redisUrl, const QString& keyNamespace);

// idem-gateway-bench --nginx: wrk against nginx as the upstream, nginx as a plain reverse proxy to
// it, and idem-gateway in front of it (docs/performance.md). Returns the exit code.
int nginxBench(const QStringList& args);

// The reference row of --nginx: a bare relay on Qt Network (QTcpServer, one QTcpSocket to the
// upstream per client, bytes copied as they come, no HTTP parsing, no idempotency). It prints
// "listening: PORT" and runs until terminated. What the same hop costs on the gateway's event loop
// and socket classes, so that a ratio's gap can be told apart from Qt Network's own cost.
int qtRelay(quint16 upstreamPort);
