#include "credentialstore.h"

#include <qt6keychain/keychain.h>

using namespace Qt::StringLiterals;

namespace {
const QString kService = u"idem-console"_s;
}

CredentialStore::CredentialStore(QObject* parent) : QObject(parent) {}

void CredentialStore::save(const QString& account, const QString& password, std::function<void(QString)> done)
{
    auto* job = new QKeychain::WritePasswordJob(kService, this);
    job->setAutoDelete(true);
    job->setKey(account);
    job->setTextData(password);
    connect(job, &QKeychain::Job::finished, this, [done = std::move(done)](QKeychain::Job* j) {
        if (done)
            done(j->error() == QKeychain::NoError ? QString() : j->errorString());
    });
    job->start();
}

void CredentialStore::load(const QString& account, std::function<void(QString, QString)> done)
{
    auto* job = new QKeychain::ReadPasswordJob(kService, this);
    job->setAutoDelete(true);
    job->setKey(account);
    connect(job, &QKeychain::Job::finished, this, [done = std::move(done)](QKeychain::Job* j) {
        auto* read = static_cast<QKeychain::ReadPasswordJob*>(j);
        if (done)
            done(j->error() == QKeychain::NoError ? read->textData() : QString(),
                 j->error() == QKeychain::NoError ? QString() : j->errorString());
    });
    job->start();
}

void CredentialStore::forget(const QString& account)
{
    auto* job = new QKeychain::DeletePasswordJob(kService, this);
    job->setAutoDelete(true);
    job->setKey(account);
    job->start();
}
