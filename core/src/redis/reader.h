#pragma once

// hiredis' reply reader as idem creates it, with a bound on what a server can make it allocate.
// Internal to idem::core (and the fuzz targets, which read replies exactly as a connection does).

#include "idem/redis/connection.h" // ReaderDeleter

#include <memory>
#include <string>

struct redisReader;

namespace idem::resp {

// hiredis 0.14 allocates an array's element pointers as soon as it reads "*<count>", before any
// element arrives: "*350953123\r\n" alone is a 2.8 GB calloc. idem's readers refuse a reply whose
// open arrays (this one and those it is nested in) name more elements than this, 128 MiB of
// pointers: over a thousand times the largest array idem asks for (a SCAN page of at most 10 000
// keys, CLUSTER SLOTS' 16 384 ranges, a batch's answers), and a client's memory stays its own.
inline constexpr long long kMaxPendingElements = 1LL << 24;

using ReaderPtr = std::unique_ptr<redisReader, ReaderDeleter>;

// A reader that refuses such replies: redisReaderGetReply fails, readerError() says why.
ReaderPtr makeReader();
// Why the reader failed (its protocol error, or the array it refused), for a ProtoError.
std::string readerError(const redisReader* r);

} // namespace idem::resp
