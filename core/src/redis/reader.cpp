#include "redis/reader.h"

#include <hiredis/hiredis.h>

#include <mutex>
#include <new>

namespace idem {

namespace {

// Per reader (its privdata): the elements announced at once that it refused, -1 while none.
struct ReaderState {
    long long refused = -1;
};

const redisReplyObjectFunctions& hiredisFunctions()
{
    // hiredis does not export its default functions: a reader it creates points to them
    static const redisReplyObjectFunctions functions = [] {
        redisReader* r = redisReaderCreate();
        if (!r)
            throw std::bad_alloc();
        const redisReplyObjectFunctions copy = *r->fn;
        redisReaderFree(r);
        return copy;
    }();
    return functions;
}

// hiredis' createArray, unless the arrays still open would name too many elements. (The count's
// type is int in hiredis 0.14, size_t from 1.0.)
template <typename Count>
void* boundedArray(const redisReadTask* task, Count elements)
{
    long long pending = static_cast<long long>(elements);
    for (const redisReadTask* open = task->parent; open; open = open->parent)
        pending += static_cast<long long>(open->elements);
    if (pending > resp::kMaxPendingElements) {
        if (auto* state = static_cast<ReaderState*>(task->privdata))
            state->refused = pending;
        return nullptr; // the reader fails the reply (hiredis says "Out of memory")
    }
    return hiredisFunctions().createArray(task, elements);
}

// hiredis' functions with createArray bounded, filled by the first makeReader(): a reader that
// points here is one of idem's (its privdata is a ReaderState)
redisReplyObjectFunctions bounded;

redisReplyObjectFunctions* boundedFunctions()
{
    static std::once_flag once;
    std::call_once(once, [] {
        bounded = hiredisFunctions();
        bounded.createArray = &boundedArray;
    });
    return &bounded;
}

} // namespace

void ReaderDeleter::operator()(redisReader* r) const noexcept
{
    if (!r)
        return;
    if (r->fn == &bounded)
        delete static_cast<ReaderState*>(r->privdata);
    redisReaderFree(r);
}

namespace resp {

ReaderPtr makeReader()
{
    auto state = std::make_unique<ReaderState>();
    ReaderPtr r(redisReaderCreateWithFunctions(boundedFunctions()));
    if (!r)
        throw std::bad_alloc();
    r->privdata = state.release();
    return r;
}

std::string readerError(const redisReader* r)
{
    if (r->fn == &bounded)
        if (const auto* state = static_cast<const ReaderState*>(r->privdata); state && state->refused >= 0)
            return "the server announced " + std::to_string(state->refused) +
                   " array elements at once: more than idem reads in one reply (" +
                   std::to_string(kMaxPendingElements) + ")";
    return r->errstr[0] ? r->errstr : "protocol error";
}

} // namespace resp
} // namespace idem
