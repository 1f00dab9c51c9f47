// A worker of the leased mode on PostgreSQL for tst_pgexecutor, to be SIGKILLed mid-work:
//   idem-test-pgworker CONNINFO ID LEASE_MS
// The first attempt records the recovery point "charged" (its data: "charge-<pid>"), says
// "checkpointed" on stdout and waits to be killed. An attempt told a recovery point prints
// "resumed <phase> <data>" and completes with "shipped after <data>".
#include "idem/engine/executor.h"
#include "idem/pg/pgstore.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <unistd.h>

int main(int argc, char** argv)
{
    if (argc != 4) {
        std::fprintf(stderr, "usage: idem-test-pgworker CONNINFO ID LEASE_MS\n");
        return 64;
    }
    idem::PgStoreOptions options;
    options.lease = idem::Millis(std::stoll(argv[3]));
    idem::PgStore store(argv[1], options);
    idem::Executor executor(store);
    const idem::Outcome o = executor.execute(argv[2], "", [](const idem::WorkContext& ctx) {
        if (ctx.phase.empty()) {
            if (!ctx.checkpoint("charged", "charge-" + std::to_string(::getpid())))
                return idem::WorkResult::failure("lease lost before the checkpoint");
            std::printf("checkpointed\n");
            std::fflush(stdout);
            for (;;) // killed here, with the recovery point recorded
                std::this_thread::sleep_for(std::chrono::seconds(1));
        }
        std::printf("resumed %s %s attempt %lld\n", ctx.phase.c_str(), ctx.phaseData.c_str(),
                    static_cast<long long>(ctx.attempt));
        return idem::WorkResult::success("shipped after " + ctx.phaseData);
    });
    std::printf("outcome %s\n", std::string(idem::nameOf(o.kind)).c_str());
    return o.kind == idem::OutcomeKind::Executed || o.kind == idem::OutcomeKind::Replayed ? 0 : 1;
}
