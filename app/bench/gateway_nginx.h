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
