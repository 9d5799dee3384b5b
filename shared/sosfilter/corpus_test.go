package sosfilter

import "42sisters.ai/oracle/shared/oracle"

// The VC-2 corpus: realistic verdicts as the model writes them, verified
// by hand to hold no blocked term. They use on purpose the ordinary English
// that a careless filter would corrupt: "manifold" as an adjective,
// "coherent" and "coherence" in a business sense, "stability", "lattice",
// "the ring road", lowercase "gamma", "gloss", "logos", "nous", "smokey",
// numbers like 0.4, 0.42, 97% and 97.5%, "10-minute", "4x4", curly quotes
// and dashes.

type verdictCase struct {
	name  string
	tier  oracle.Tier
	query string
	a     oracle.Analysis
}

const (
	green = oracle.VerdictGreen
	amber = oracle.VerdictAmber
	red   = oracle.VerdictRed
	null  = oracle.VerdictNull
)

// dims builds a breakdown in oracle.Dimensions order.
func dims(v [5]oracle.Verdict, text [5]string) map[string]oracle.DimensionNote {
	m := make(map[string]oracle.DimensionNote, 5)
	for i, d := range oracle.Dimensions {
		m[d] = oracle.DimensionNote{Verdict: v[i], Analysis: text[i]}
	}
	return m
}

func quickCase(name, query string, v oracle.Verdict, summary string) verdictCase {
	return verdictCase{name: "quick/" + name, tier: oracle.TierQuick, query: query, a: oracle.Analysis{Verdict: v, Summary: summary}}
}

func fullCase(name, query string, v oracle.Verdict, summary string, dv [5]oracle.Verdict, text [5]string) verdictCase {
	return verdictCase{name: "full/" + name, tier: oracle.TierFull, query: query,
		a: oracle.Analysis{Verdict: v, Summary: summary, Breakdown: dims(dv, text)}}
}

func strategyCase(name, query string, v oracle.Verdict, summary string, dv [5]oracle.Verdict, text [5]string, next, alt string, tests [3]string) verdictCase {
	return verdictCase{name: "strategy/" + name, tier: oracle.TierStrategy, query: query,
		a: oracle.Analysis{Verdict: v, Summary: summary, Breakdown: dims(dv, text),
			Strategy: &oracle.Strategy{NextStep: next, Alternative: alt, Tests: tests[:]}}}
}

var cleanVerdicts = []verdictCase{
	quickCase("dog-grooming", "Should I start a mobile dog grooming van in Markham?", green,
		"A mobile dog-grooming van in a dense suburb is viable: demand is steady, margins of around 40% hold after fuel, and the main risk is booking no-shows, which a small deposit solves."),
	quickCase("second-location", "Where should my bakery open its second location?", amber,
		"The options for a second location are manifold, but only the downtown site has the foot traffic to cover rent in year one; commit to it only after a 10-minute exit survey of 200 customers."),
	quickCase("radon-detector", "Is a home radiation detector a good product to launch?", red,
		"A consumer radon and gamma rays detector is a crowded niche: without a certification edge it competes on price alone, and a retail margin of 0.4 leaves nothing for marketing."),
	quickCase("gloss-finish", "Should my furniture workshop offer a premium finish?", green,
		"Offering a high-gloss finish on custom tables commands a 30% premium; one spray booth covers it, and payback is under nine months at current volume."),
	quickCase("embroidery", "Can I make a living embroidering team logos?", amber,
		"Embroidering brand logos for local teams is steady but small: expect 97% of revenue from repeat clubs and plan for a slow summer."),
	quickCase("off-road-tours", "Is a guided off-road tour business worth it?", amber,
		"Renting 4x4 vehicles for guided off-road tours fits the region, but insurance is the binding cost; get three quotes before committing to a fleet."),
	quickCase("pitch-coherence", "Is my edtech pitch ready for investors?", red,
		"The pitch lacks coherence: the product targets students while the pricing targets enterprises. Pick one buyer and the plan becomes coherent and fundable."),
	quickCase("subscription-box", "Would a local snack subscription box work?", green,
		"It’s a “yes, but”: the subscription box works — churn below 5% a month is realistic — if you source locally and keep the box under C$40."),

	fullCase("coffee-kiosk", "Should I open a coffee kiosk at Union Station?", green,
		"A kiosk at a commuter hub is a strong bet: the queue is the marketing, and a 0.42 ratio of repeat buyers by month three would cover the lease.",
		[5]oracle.Verdict{green, amber, green, amber, green},
		[5]string{
			"Commuter volume is predictable and barely seasonal, which gives the revenue unusual stability for a food business.",
			"The station operator can change lease terms at renewal; a three-year term with a cap on increases limits that exposure.",
			"Specialty coffee tastes move slowly, so the menu can stay lean and the equipment will not date.",
			"Fit-out takes six to eight weeks with permits; plan the opening for September, when commuter traffic returns.",
			"Growth comes from a second kiosk rather than a bigger first one: the model is a chain of small, identical units.",
		}),
	fullCase("invoice-saas", "Is there room for another invoice automation tool for small firms?", amber,
		"Invoice automation for small accounting firms has manifold benefits for the buyer, but the market already has three well-funded incumbents; a niche is the only way in.",
		[5]oracle.Verdict{amber, amber, green, amber, red},
		[5]string{
			"Recurring revenue gives stability once a firm is onboarded, but onboarding takes weeks and early churn is high.",
			"Incumbents discount hard when a challenger appears; expect price pressure within the first year.",
			"Tax rule changes every January keep the product relevant and force competitors to spend on updates too.",
			"A usable first version needs bank feeds and two accounting integrations, roughly nine months of work for a small team.",
			"Without a distinct niche, such as firms serving farmers, the growth curve flattens after the first few hundred customers.",
		}),
	fullCase("lattice-fencing", "Should I add decorative fencing to my landscaping business?", green,
		"Adding cedar lattice fencing to an existing landscaping business is a natural upsell: the crews, the truck and the customers are already there.",
		[5]oracle.Verdict{green, green, amber, green, green},
		[5]string{
			"Fencing jobs are booked months ahead, which smooths the cash flow between spring and autumn.",
			"Lumber prices swing by a third in a year; quote with a price-adjustment clause or lock supply in March.",
			"Demand for privacy screens rose with home offices and shows no sign of reversing.",
			"One crew can learn lattice panel installation in a week with the supplier’s training day.",
			"Homes along the ring road are the densest cluster of prospects: start there and let neighbours see the work.",
		}),
	fullCase("taproom", "Would a craft brewery taproom succeed in my town?", amber,
		"A taproom can work in a town of this size if it doubles as the community’s evening space; beer alone will not fill it on weeknights.",
		[5]oracle.Verdict{amber, amber, green, amber, amber},
		[5]string{
			"Weekend revenue is reliable, weekday revenue is not; food trucks and quiz nights are what stabilise the week.",
			"Licensing reviews can take five months, and a single complaint from neighbours can delay them further.",
			"Consistency sells: aim for 97.5% of batches within spec before you widen the range.",
			"A smokey porter and a light lager cover most of the market; a rotating third tap keeps regulars curious.",
			"Distribution to local restaurants is the second stage, once the taproom shows which beers sell.",
		}),
	fullCase("tutoring-marketplace", "Can a language tutoring marketplace compete with the big apps?", red,
		"A general language tutoring marketplace will not beat the big apps on price or reach; the founders have the business nous to pivot to a niche, and they should.",
		[5]oracle.Verdict{red, amber, red, amber, red},
		[5]string{
			"Marketplaces need both sides at once; without funding for tutor acquisition, the supply side stalls.",
			"Tutors leave for platforms with more students as soon as they have a following.",
			"Consumer language learning is shifting to self-study apps that are cheaper than any live lesson.",
			"The booking and payments core is a three-month build; the hard part is trust and vetting, not code.",
			"A niche such as exam preparation for nurses moving to Canada has a clear buyer and a deadline that drives purchase.",
		}),
	fullCase("e-bike-rental", "Is an electric bike rental shop near the lakeshore a good idea?", green,
		"E-bike rental near the lakeshore trail is a good seasonal business: most riders stay within 0.4 km of the path and rent for a 10-minute ride or a whole afternoon.",
		[5]oracle.Verdict{green, amber, green, green, amber},
		[5]string{
			"Summer weekends will carry the year; a corporate-event package can add stability in the shoulder months.",
			"Theft and battery damage are the real costs: GPS locks and a damage deposit keep them in check.",
			"City plans to extend the trail will bring more riders past the shop each year.",
			"Twenty bikes, a container and insurance can be ready in six weeks.",
			"A second station at the far end of the trail allows one-way rentals, which riders pay more for.",
		}),
	fullCase("home-bakery", "Should I turn my home bakery into a storefront?", amber,
		"The home bakery has loyal customers but not yet the volume for a storefront; a shared commercial kitchen is the safer step.",
		[5]oracle.Verdict{amber, amber, green, amber, amber},
		[5]string{
			"Pre-orders give you stability today; a storefront adds walk-in uncertainty and fixed rent.",
			"Ingredient costs, especially butter, have risen sharply; a small price rise is overdue either way.",
			"The demand for custom cakes with a mirror gloss finish is growing and commands premium prices.",
			"A shared kitchen can be running in a month; a storefront fit-out takes four to six.",
			"Wholesale to two cafés would prove the volume a storefront needs before you sign a lease.",
		}),
	fullCase("drone-photography", "Is real-estate drone photography still a good business?", null,
		"The outcome depends on local regulation: drone photography for listings is profitable where flight approvals are quick, and not where they take weeks.",
		[5]oracle.Verdict{amber, amber, amber, green, amber},
		[5]string{
			"Listing volume follows the housing market, which makes the revenue cyclical.",
			"Airspace rules near the airport restrict a third of the city; check the map before buying equipment.",
			"Agents increasingly expect aerial shots as standard, which supports steady demand.",
			"Certification, insurance and a good drone can be in place within a month.",
			"Adding 3D floor plans lets one visit earn twice, the natural way to grow.",
		}),

	strategyCase("senior-meal-kits", "Should I launch meal kits for seniors living alone?", green,
		"Meal kits designed for seniors living alone meet a real and growing need, and families are willing to pay for them on a parent’s behalf.",
		[5]oracle.Verdict{green, amber, green, amber, green},
		[5]string{
			"Subscriptions paid by adult children churn less than typical meal kits because the purchase is about care, not novelty.",
			"Dietary requirements vary widely; a wrong delivery is a health issue, not just a complaint.",
			"The population of seniors living alone is growing every year in every region you could serve.",
			"A kitchen partner and a delivery route in one postal district can be running in eight weeks.",
			"Partnerships with home-care agencies are the growth channel: they already visit the customers.",
		},
		"Sign up 30 families in one district for a paid four-week pilot before renting any kitchen space.",
		"License your menus to an existing meal-kit company’s seniors line instead of building delivery yourself.",
		[3]string{
			"Ask five home-care agencies whether they would recommend the service and at what referral fee.",
			"Run a one-week menu test with ten seniors and record what is left uneaten.",
			"Price three plans and see which one the first 30 families choose.",
		}),
	strategyCase("indie-game", "Should my two-person studio make a cosy farming game?", amber,
		"A cosy farming game is a crowded genre; a small studio can succeed in it only with a distinct hook and a long wishlist campaign.",
		[5]oracle.Verdict{amber, red, amber, amber, green},
		[5]string{
			"Revenue arrives in one spike at launch, so the studio needs savings for the year before it.",
			"Dozens of farming games launch every quarter; visibility on the store is the main risk.",
			"Players keep buying the genre, but they expect polish: lighting and gamma correction issues get noticed in reviews.",
			"A vertical slice in four months is realistic; a full game will take eighteen.",
			"A strong demo can grow a wishlist steadily; festivals are the cheapest way to get it seen.",
		},
		"Build a 20-minute demo around the hook and put it on the store page before anything else.",
		"Pitch the prototype to a publisher that specialises in cosy games and trade revenue share for marketing.",
		[3]string{
			"Show the demo at two online festivals and track wishlists per thousand views.",
			"Post three short clips of the hook and see which one gets shared.",
			"Ask 20 genre fans to rank the hook against two competing games.",
		}),
	strategyCase("car-detailing", "Is a mobile car detailing business worth starting?", green,
		"Mobile car detailing has low start-up costs and loyal repeat customers, and ceramic coatings add a premium tier.",
		[5]oracle.Verdict{green, amber, green, green, amber},
		[5]string{
			"Repeat customers book monthly, which gives steady income once a route is full.",
			"Weather cancels outdoor jobs; a covered space for winter keeps the calendar intact.",
			"Owners of new cars, especially 4x4 and electric models, want their paint protected and pay for it.",
			"A van, a water tank and products cost under C$15,000 and can be ready in three weeks.",
			"Fleet contracts with dealerships are the way to grow beyond one van.",
		},
		"Offer a launch price to 50 households in two neighbourhoods and book them on fixed days.",
		"Partner with a car wash to use its bays in winter instead of buying a covered space.",
		[3]string{
			"Measure how many first-time customers rebook within 60 days.",
			"Test whether a gloss finish package sells at 40% more than the basic wash.",
			"Call three dealerships and ask what they pay per car today.",
		}),
	strategyCase("coworking", "Should I open a coworking space in a mid-sized town?", amber,
		"A coworking space in a mid-sized town can work if it is small and community-led; the options are manifold, but most fail on empty desks.",
		[5]oracle.Verdict{amber, amber, amber, red, amber},
		[5]string{
			"Monthly memberships give stability only once you have enough of them; the first year usually runs at a loss.",
			"Remote-work policies change quickly, and a large employer calling staff back can empty half the desks.",
			"Demand is steady among freelancers and small agencies, who value the community as much as the desk.",
			"A full fit-out with meeting rooms takes longer and costs more than most first budgets assume.",
			"Events and a café counter bring people in who later become members.",
		},
		"Run a pop-up coworking day every week for two months in a rented hall before signing a lease.",
		"Share a floor with an existing business that has spare desks, instead of leasing your own space.",
		[3]string{
			"Count how many pop-up attendees come back three weeks in a row.",
			"Ask ten freelancers what they would pay per month for a fixed desk.",
			"Test whether a free monthly talk fills the room.",
		}),
	strategyCase("bookkeeping-course", "Should I sell an online bookkeeping course for small businesses?", green,
		"An online bookkeeping course for small-business owners is a sound idea: the need is constant, and your accounting background gives the course coherence and credibility.",
		[5]oracle.Verdict{green, green, green, amber, amber},
		[5]string{
			"Evergreen topics sell for years with small updates, which gives the income stability.",
			"Free videos compete for attention; the course must promise a concrete result, such as year-end books done in a weekend.",
			"Every new tax season brings a new wave of owners looking for help.",
			"A first version with eight short modules can be recorded in six weeks.",
			"A coherent ladder from course to templates to a group coaching tier raises lifetime value.",
		},
		"Pre-sell the course to your own clients at half price and record it only once 25 have paid.",
		"Partner with a bank that serves small businesses and offer the course as part of its onboarding.",
		[3]string{
			"Measure how many pre-sale buyers finish the first module.",
			"Compare sign-ups for two promises: saving time and avoiding penalties.",
			"Ask three bank branch managers whether they would recommend the course.",
		}),
	strategyCase("drone-surveys", "Can a drone survey service for farms make money?", amber,
		"Drone surveys for farms are valuable during the growing season and idle otherwise; a second line of work is needed for year-round income.",
		[5]oracle.Verdict{amber, amber, green, green, amber},
		[5]string{
			"Income falls away from November to April; construction site surveys can bring stability in those months.",
			"Weather windows are short in spring, and a week of rain can push several contracts back at once.",
			"Farmers who adopt field mapping rarely go back; 97% of pilot users in similar programmes renewed.",
			"Equipment and certification are ready within two months.",
			"Co-operatives are the growth channel: one agreement can bring dozens of farms.",
		},
		"Offer three farms a free first survey in exchange for a case study and a referral.",
		"Sell the survey data as a subscription through an agronomy firm instead of selling flights.",
		[3]string{
			"Track whether the three pilot farms change a decision because of the maps.",
			"Ask two co-operatives what a group price would need to be.",
			"Quote one construction site for winter work.",
		}),
	strategyCase("pet-insurance-broker", "Should I become an independent pet insurance broker?", red,
		"Independent brokering of pet insurance earns too little per policy to support a business; commissions are thin and insurers sell directly online.",
		[5]oracle.Verdict{red, amber, amber, amber, red},
		[5]string{
			"Commissions of 0.42 of the first-year premium and little after that give no stable base.",
			"Insurers change commission tables without notice, which can halve income overnight.",
			"Pet ownership is growing, but buyers compare prices online and rarely need advice.",
			"Licensing takes about three months.",
			"Scale would need thousands of policies, which means a marketing budget the plan does not have.",
		},
		"Drop the standalone plan and offer pet insurance as an add-on service in an existing pet business.",
		"Join an established brokerage as an agent and test demand without the fixed costs.",
		[3]string{
			"Ask ten veterinary clinics whether their clients want advice on insurance.",
			"Calculate income per policy over three years with two insurers’ commission tables.",
			"See how many of 100 pet owners click an offer of a free policy comparison.",
		}),
}
