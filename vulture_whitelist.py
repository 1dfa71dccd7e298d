"""Names the dead-code gate (``vulture``, configured in pyproject.toml) reports as unused although
something uses them: a framework calls them, or tests and benchmarks read them. vulture scans only
``gitdeploy/``, so code that nothing in the product uses is reported; a name goes here only with
the reason it is not dead. This file is read by vulture, never imported.
"""

from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# -- Framework callbacks -------------------------------------------------------------------------

# click registers these commands through their decorators (`gitdeploy cluster up|down|status`,
# `gitdeploy rollout status`): nothing calls them by name.
_.up  # gitdeploy/cli/cluster_cmd.py
_.down  # gitdeploy/cli/cluster_cmd.py
_.cluster_status  # gitdeploy/cli/cluster_cmd.py
_.rollout_status  # gitdeploy/cli/status_cmd.py
# the top-level commands are loaded by name when used (gitdeploy/cli/main.py's COMMANDS); click
# calls format_commands to print `gitdeploy --help`'s list
_.deploy  # gitdeploy/cli/deploy_cmd.py
_.demo  # gitdeploy/cli/demo_cmd.py
_.format_commands  # gitdeploy/cli/main.py
# Python calls a module's __getattr__ for a name it lacks (PEP 562): LocalCluster, imported lazily
_.__getattr__  # gitdeploy/localcluster/__init__.py

# uvicorn calls Server.capture_signals and reads should_exit (gitdeploy/web/serving.py overrides
# the one and sets the other so a stop ends with exit 0); the dashboard's Jinja2 templates
# (gitdeploy/web/templates/apps_live.html) read the counts of an AppsPage, and app_live.html
# an AppDetail's hook logs and commit link.
_.capture_signals  # gitdeploy/web/serving.py
_.should_exit  # gitdeploy/web/serving.py
_.sync_counts  # gitdeploy/web/selection.py
_.health_counts  # gitdeploy/web/selection.py
_.hook_logs  # gitdeploy/web/detail.py
_.commit_link  # gitdeploy/web/detail.py

# http.server / socketserver read these class attributes and call these methods (the embedded
# cluster's API server in gitdeploy/localcluster/server.py and httpwire.py).
_.daemon_threads
_.block_on_close
_.address_family
_.server_name
_.server_port
_.protocol_version
_.disable_nagle_algorithm
_.wbufsize
_.server_version
_.sys_version
_.handle_error
_.log_message
_.do_HEAD
_.do_POST
_.do_PUT
_.do_PATCH
_.do_DELETE
_.do_GET  # the embedded cluster's handler (gitdeploy/localcluster/server.py)
_.close_connection
_.allow_reuse_address

# ruamel.yaml reads the loader's `Resolver` attribute (gitdeploy/manifests/documents.py).
_.Resolver

# -- Fields of data, read where they are shown or compared ---------------------------------------

# GatePhase.AFTER is reached by value (`GatePhase("after")`, from a fault test's request).
_.AFTER  # gitdeploy/localcluster/writegate.py
# A commit's committer and a changed file's kind: filled from git, read by tests and kept for
# what a plan or history may show (gitdeploy/core/commits.py).
_.committer_name
_.committer_email
_.change_type
# LeaseDecision.acquired: a new term rather than a renewal (gitdeploy/core/lease.py; tests).
_.acquired
# DeploymentStatus mirrors the Kubernetes Deployment status, unavailableReplicas included
# (gitdeploy/core/scaling/progress.py; tests).
_.unavailable_replicas

# -- Test and benchmark support: product code that tests and bench/ drive on purpose -------------

_.FakeClock  # gitdeploy/clock.py: the fake clock tests and benchmarks drive time with
_.advance  # FakeClock.advance
_.list_events  # Cluster.list_events: tests read the Events gitdeploy wrote
_.delivered  # Notifier.delivered: tests count the notifications delivered
_.misses  # BlobCache.misses: tests and benchmarks count cache misses
_.discard_entry  # BlobCache.discard_entry: tests drop an entry to force a read
_.clear_entries  # BlobCache.clear_entries: tests empty the cache
_.changed_tags  # ImageStream poll result: tests check which tags moved
_.from_objects  # localcluster Access.from_objects: the RBAC fixture builds access from manifests
_.ca_path  # LocalCluster.ca_path: test fixtures trust the embedded cluster's certificate
_.ok  # LoadResult.ok: tests assert a manifest set loaded without diagnostics
_.git_command_counts  # ConfigRepo: tests and benchmarks count git commands
_.consecutive_failures  # ConfigRepo: fault tests check the failure count
_.files_at  # ConfigRepo.files_at: tests read a commit's files
_.publish_app_states  # gitdeploy/cli/run_cmd.py: the observability test publishes the gauges
_.settle  # Scheduler.settle: tests and benchmarks drive the loop on a fake clock with it

# -- Canary (issue 23): fields read from the manifests that the engine does not act on yet ---------

# What an AnalysisTemplate and a Rollout's analysis say, read into the core model and held to the
# manifests by tests/unit/manifests/test_rollouts.py and test_analysistemplates.py. Analysis is
# refused at load time until the analysis runner exists; it will read these.
_.PUT  # WebMethod.PUT, reached by value (WebMethod("PUT"))
_.json_path  # WebProvider
_.initial_delay_seconds  # Metric
_.success_condition  # Metric
_.failure_condition  # Metric
_.failure_limit  # Metric
_.inconclusive_limit  # Metric
_.pod_template_hash  # AnalysisArg

# -- Sharding (issue 25) ----------------------------------------------------------------------------
_.user_agent  # kubernetes ApiClient.user_agent: a property setter of the client (Cluster.name_client)
_.shard_epoch  # AppView.shard_epoch: printed by `gitdeploy status -o json`, read by dataclasses.asdict

# -- CLI start-up ----------------------------------------------------------------------------------
_.ssl_ca_cert  # kubernetes Configuration.ssl_ca_cert: read by the client's REST layer (connect_with_token)
