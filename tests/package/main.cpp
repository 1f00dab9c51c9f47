// Links idem::core from an installed package and uses it, without Qt.
#include <idem/engine/executor.h>
#include <idem/engine/fingerprint.h>

#include <cstdio>

int main()
{
    idem::ConnectionPool pool(idem::ConnectionOptions::fromUrl("redis://127.0.0.1:1/0"), 1);
    idem::Store store(pool);
    const std::string id = idem::deriveId("orders", {{"order", "42"}});
    std::printf("%s %s\n", id.c_str(), store.recordKey(id).c_str());
    return id.size() == 36 ? 0 : 1;
}
