#pragma once

#include <QLoggingCategory>

Q_DECLARE_LOGGING_CATEGORY(lcConsole)
Q_DECLARE_LOGGING_CATEGORY(lcWorker)
