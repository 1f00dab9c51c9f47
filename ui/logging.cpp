#include "logging.h"

Q_LOGGING_CATEGORY(lcConsole, "idem.console")
Q_LOGGING_CATEGORY(lcWorker, "idem.worker")
