"""`manage.py load_demo`: the demo project behind `make run`.

Idempotent: users, memberships and campaigns are created only when absent,
and datasets go through the real importer, which leaves an already imported
file unchanged.
"""

import io
import json

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import transaction

from annotations.allocation.services import campaign_stop
from annotations.demo import demo_datasets
from annotations.demo.simulated import NOTICE, SIMULATED, campaign_simulate
from annotations.models import Assignment, Campaign, Dataset, Membership
from annotations.services.campaigns import campaign_create
from annotations.services.imports import ImportFailed, dataset_import
from annotations.services.projects import annotator_get_or_create, membership_add, project_get_or_create
from metrics.models import RunStatus
from metrics.services import RunInputError, run_create, run_execute_sync
from workbench.commands import DataCommand

PROJECT = "Demo"
USERS = [("demo", "demo", Membership.Role.OWNER), ("annot", "annot", Membership.Role.ANNOTATOR)]
CAMPAIGNS = [
    {
        "dataset": "demo-restaurants-d2t",
        "name": "Demo restaurants: fluency and adequacy",
        "protocol": "likert",
        "criteria": ["fluency", "adequacy"],
        "scale_min": 1,
        "scale_max": 5,
        "redundancy": 2,
        "criteria_config": [
            {
                "name": "fluency",
                "question": "Is it well-formed, natural English?",
                "min_label": "very poor",
                "max_label": "perfect",
            },
            {
                "name": "adequacy",
                "question": "Does it express all the attributes, and nothing that is not in the table?",
                "min_label": "very poor",
                "max_label": "perfect",
            },
        ],
        "instructions": (
            "Read the attribute table, then rate each description.\n\n"
            "- **Fluency**: is it well-formed, natural English?\n"
            "- **Adequacy**: does it express all the attributes, and nothing that is not in the table?\n\n"
            "1 = very poor, 5 = perfect."
        ),
    },
    {
        "dataset": "demo-news-de-en",
        "name": "Demo translation: side by side",
        "protocol": "pairwise",
        "criteria": ["adequacy"],
        "criteria_config": [
            {"name": "adequacy", "question": "Which translation conveys the meaning of the German sentence better?"}
        ],
        "redundancy": 2,
        "instructions": "Which translation conveys the meaning of the German sentence better? Choose a **tie** "
        "if they are equally good.",
    },
    {
        "dataset": "demo-restaurants-d2t",
        "name": "Demo restaurants: RankME",
        "protocol": "rankme",
        "criteria": ["informativeness", "naturalness"],
        "criteria_config": [
            {"name": "informativeness", "question": "Does it give all the useful information of the table?"},
            {"name": "naturalness", "question": "Could a native speaker have written it?"},
        ],
        "anchor_value": 100,
        "tuple_size": 3,
        "redundancy": 2,
        "instructions": "The **anchor** is a human-written reference, worth 100. Give each description a number "
        "relative to it: 200 if it is twice as good, 50 if half as good. Equal numbers tie.",
    },
    {
        "dataset": "demo-simplification",
        "name": "Demo simplification: best-worst",
        "protocol": "bws",
        "criteria": ["simplicity"],
        "criteria_config": [
            {"name": "simplicity", "question": "Which simplification is easiest to read while keeping the meaning?"}
        ],
        "tuple_size": 3,
        "redundancy": 2,
        "show_source": True,
        "instructions": "Pick the **best** and the **worst** simplification of the sentence.",
    },
    {
        "dataset": "demo-news-de-en",
        "name": "Demo translation: error spans (ESA)",
        "protocol": "esa",
        "criteria": ["quality"],
        "redundancy": 2,
        "severities": ["minor", "major"],
        "instructions": "1. **Select** each error in the translation and mark it *minor* (style, grammar, word "
        "choice) or *major* (meaning changed, hard to understand).\n2. If something is missing, "
        "add a *missing content* marker.\n3. Then give an overall score from 0 (broken) to 100 "
        "(perfect).",
    },
    {
        "dataset": "demo-news-de-en",
        "name": "Demo translation: contrastive ESA",
        "protocol": "cesa",
        "criteria": ["quality"],
        "redundancy": 2,
        "tuple_size": 3,
        "severities": ["minor", "major"],
        "instructions": "Three translations of the same sentence. For **each**: select its errors and mark them "
        "*minor* or *major*, add a *missing content* marker if something is left out, then score "
        "it from 0 (broken) to 100 (perfect). Compare them: the better translation gets the "
        "higher score.",
    },
    {
        "dataset": "demo-news-de-en",
        "name": "Demo translation: MQM error annotation",
        "protocol": "mqm",
        "criteria": ["mqm"],
        "redundancy": 2,
        "instructions": "1. **Select** each error in the translation, then choose its *category* (the letter on "
        "its button, then the subcategory) and its *severity*: neutral (a preference, no "
        "error), minor (the meaning is clear) or major (the meaning changed, hard to "
        "understand).\n2. Content left out: *Missing content*, then its category.\n3. No "
        "error: submit with none marked. The MQM score is computed from your errors.",
    },
]


# Finished copies of every campaign above, judged by simulated annotators (labelled so in their
# names, instructions and annotator names), and done metric runs: every analysis view has
# something to show on a first visit. The campaigns above stay open for `annot` to try.
SIMULATED_ANNOTATORS = 3
METRICS = [("bleu", {}), ("chrf", {}), ("bertscore", {})]


def simulated_spec(spec: dict) -> dict:
    spec = dict(spec)
    spec["name"] = f"{spec['name']} {SIMULATED}"
    spec["instructions"] = NOTICE + "\n\n" + spec.get("instructions", "")
    spec["redundancy"] = SIMULATED_ANNOTATORS
    return spec


class Command(DataCommand):
    help = "Create the demo project, its users (demo/demo, annot/annot), datasets and campaigns (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print a JSON summary")
        parser.add_argument(
            "--without-finished",
            action="store_true",
            help="only the open campaigns: no simulated judgements, no metric runs (faster)",
        )

    def handle(self, *args, **options):
        log: list[str] = []
        try:
            summary = self._load(log, finished=not options["without_finished"])
            if not options["without_finished"]:
                self._finish(summary, log)
        except ImportFailed as exc:
            raise CommandError("\n".join(str(e) for e in exc.errors)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(summary))
        else:
            for line in log:
                self.stdout.write(line)
            self.stdout.write(
                self.style.SUCCESS("Demo ready: log in as demo / demo (owner) or annot / annot (annotator).")
            )

    @transaction.atomic
    def _load(self, log: list[str], *, finished: bool) -> dict:
        User = get_user_model()
        users = {}
        for username, password, role in USERS:
            user, created = User.objects.get_or_create(username=username)
            if created:
                user.set_password(password)
                user.save(update_fields=["password"])
            users[username] = user
            log.append(f"user {username}: {'created' if created else 'exists'}")

        project = project_get_or_create(name=PROJECT, owner=users["demo"])
        for username, _, role in USERS:
            membership_add(project=project, user=users[username], role=role)
        annotator_get_or_create(project=project, name="annot", user=users["annot"])
        log.append(f"project {PROJECT}: demo is owner, annot is annotator")
        # The demo shows every protocol; keep the seeds fixed so the demo looks the same each time.

        datasets = []
        for demo in demo_datasets():
            result = dataset_import(
                stream=io.BytesIO(demo.jsonl()),
                dataset_name=demo.name,
                project_name=PROJECT,
                fmt="jsonl",
                filename=f"{demo.name}.jsonl",
                user=users["demo"],
            )
            Dataset.objects.filter(pk=result.dataset.pk, description="").update(description=demo.description)
            state = "unchanged" if result.unchanged else ("created" if result.created else "updated")
            log.append(f"dataset {demo.name}: {state} ({result.items} items, {result.outputs} outputs)")
            datasets.append({"dataset": demo.name, "items": result.items, "outputs": result.outputs, "state": state})

        campaigns = []
        for spec in CAMPAIGNS + ([simulated_spec(spec) for spec in CAMPAIGNS] if finished else []):
            spec = dict(spec)
            dataset = Dataset.objects.get(name=spec.pop("dataset"))
            campaign = Campaign.objects.filter(name=spec["name"]).first()
            if campaign is not None:
                state = "exists"
            else:
                campaign = campaign_create(dataset=dataset, seed=len(campaigns) + 1, **spec)
                state = "created"
            log.append(f"campaign {spec['name']}: {state}")
            campaigns.append({"campaign": spec["name"], "state": state, "id": campaign.pk})
        for entry in campaigns if not finished else []:
            entry.pop("id")

        return {"project": PROJECT, "users": sorted(users), "datasets": datasets, "campaigns": campaigns}

    def _finish(self, summary: dict, log: list[str]) -> None:
        """Outside the import's transaction: the engine and the metric runs commit as they go."""
        for n, entry in enumerate(summary["campaigns"], start=1):
            campaign = Campaign.objects.get(pk=entry.pop("id"))
            if campaign.name.endswith(SIMULATED) and not Assignment.objects.filter(campaign=campaign).exists():
                units = campaign_simulate(campaign, annotators=SIMULATED_ANNOTATORS, seed=n)
                # Finished: stopped with the reason, so the card says it and annotators are not offered it.
                with transaction.atomic():
                    campaign_stop(campaign=campaign, reason="demo: every unit was judged by simulated annotators")
                log.append(f"campaign {campaign.name}: {units} units judged by simulated annotators")
                entry["simulated_units"] = units
        owner = get_user_model().objects.get(username="demo")
        runs = []
        for demo in demo_datasets():
            dataset = Dataset.objects.get(name=demo.name)
            for metric, options in METRICS:
                try:
                    run, reused = run_create(dataset=dataset, metric=metric, options=options, user=owner, sync=True)
                    if not reused and run.status != RunStatus.DONE:
                        run = run_execute_sync(run=run)
                except RunInputError as exc:  # e.g. a model that is not installed: the demo goes on without it
                    log.append(f"metric {metric} on {demo.name}: skipped ({exc})")
                    continue
                log.append(f"metric {metric} on {demo.name}: {run.status}")
                runs.append({"dataset": demo.name, "metric": metric, "run": run.pk, "status": run.status})
        summary["runs"] = runs
