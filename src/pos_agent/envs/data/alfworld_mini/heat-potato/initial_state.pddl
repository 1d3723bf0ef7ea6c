;; alfworld-mini: heat-potato (kitchen)
;; A potato waits in the closed fridge among other vegetables; heat it and serve it on the dining table.
;; Display names: Cabinet_bar_5 = cabinet 1, Cabinet_bar_4 = cabinet 2, Cabinet_bar_3 = cabinet 3, Cabinet_bar_2 = cabinet 4, Cabinet_bar_1 = cabinet 5, CounterTop_bar_1 = countertop 1, DiningTable_bar_1 = diningtable 1, Drawer_bar_3 = drawer 1, Drawer_bar_2 = drawer 2, Drawer_bar_1 = drawer 3, Fridge_bar_1 = fridge 1, GarbageCan_bar_1 = garbagecan 1, Microwave_bar_1 = microwave 1, Sink_bar_1_bar_SinkBasin = sinkbasin 1, StoveBurner_bar_3 = stoveburner 1, StoveBurner_bar_2 = stoveburner 2, StoveBurner_bar_1 = stoveburner 3
;;                Potato_bar_1 = potato 1, Tomato_bar_1 = tomato 1, Lettuce_bar_1 = lettuce 1, Apple_bar_1 = apple 1, Bread_bar_1 = bread 1, Egg_bar_1 = egg 1, Pot_bar_1 = pot 1, Fork_bar_1 = fork 1, Bowl_bar_1 = bowl 1, PepperShaker_bar_1 = peppershaker 1
(define (problem heat_potato)
    (:domain alfred)
    (:objects
        agent1 - agent
        AppleType - otype
        BowlType - otype
        BreadType - otype
        ButterKnifeType - otype
        EggType - otype
        ForkType - otype
        KnifeType - otype
        LettuceType - otype
        PepperShakerType - otype
        PotType - otype
        PotatoType - otype
        TomatoType - otype
        CabinetType - rtype
        CounterTopType - rtype
        DiningTableType - rtype
        DrawerType - rtype
        FridgeType - rtype
        GarbageCanType - rtype
        MicrowaveType - rtype
        SinkBasinType - rtype
        StoveBurnerType - rtype
        Potato_bar_1 - object
        Tomato_bar_1 - object
        Lettuce_bar_1 - object
        Apple_bar_1 - object
        Bread_bar_1 - object
        Egg_bar_1 - object
        Pot_bar_1 - object
        Fork_bar_1 - object
        Bowl_bar_1 - object
        PepperShaker_bar_1 - object
        Cabinet_bar_5 - receptacle
        Cabinet_bar_4 - receptacle
        Cabinet_bar_3 - receptacle
        Cabinet_bar_2 - receptacle
        Cabinet_bar_1 - receptacle
        CounterTop_bar_1 - receptacle
        DiningTable_bar_1 - receptacle
        Drawer_bar_3 - receptacle
        Drawer_bar_2 - receptacle
        Drawer_bar_1 - receptacle
        Fridge_bar_1 - receptacle
        GarbageCan_bar_1 - receptacle
        Microwave_bar_1 - receptacle
        Sink_bar_1_bar_SinkBasin - receptacle
        StoveBurner_bar_3 - receptacle
        StoveBurner_bar_2 - receptacle
        StoveBurner_bar_1 - receptacle
        loc_bar_0 - location
        loc_bar_1 - location
        loc_bar_2 - location
        loc_bar_3 - location
        loc_bar_4 - location
        loc_bar_5 - location
        loc_bar_6 - location
        loc_bar_7 - location
        loc_bar_8 - location
        loc_bar_9 - location
        loc_bar_10 - location
        loc_bar_11 - location
        loc_bar_12 - location
        loc_bar_13 - location
        loc_bar_14 - location
        loc_bar_15 - location
        loc_bar_16 - location
        loc_bar_17 - location
    )
    (:init
        (atLocation agent1 loc_bar_0)
        (receptacleType Cabinet_bar_5 CabinetType)
        (receptacleAtLocation Cabinet_bar_5 loc_bar_1)
        (openable Cabinet_bar_5)
        (receptacleType Cabinet_bar_4 CabinetType)
        (receptacleAtLocation Cabinet_bar_4 loc_bar_2)
        (openable Cabinet_bar_4)
        (receptacleType Cabinet_bar_3 CabinetType)
        (receptacleAtLocation Cabinet_bar_3 loc_bar_3)
        (openable Cabinet_bar_3)
        (receptacleType Cabinet_bar_2 CabinetType)
        (receptacleAtLocation Cabinet_bar_2 loc_bar_4)
        (openable Cabinet_bar_2)
        (receptacleType Cabinet_bar_1 CabinetType)
        (receptacleAtLocation Cabinet_bar_1 loc_bar_5)
        (openable Cabinet_bar_1)
        (receptacleType CounterTop_bar_1 CounterTopType)
        (receptacleAtLocation CounterTop_bar_1 loc_bar_6)
        (receptacleType DiningTable_bar_1 DiningTableType)
        (receptacleAtLocation DiningTable_bar_1 loc_bar_7)
        (receptacleType Drawer_bar_3 DrawerType)
        (receptacleAtLocation Drawer_bar_3 loc_bar_8)
        (openable Drawer_bar_3)
        (receptacleType Drawer_bar_2 DrawerType)
        (receptacleAtLocation Drawer_bar_2 loc_bar_9)
        (openable Drawer_bar_2)
        (receptacleType Drawer_bar_1 DrawerType)
        (receptacleAtLocation Drawer_bar_1 loc_bar_10)
        (openable Drawer_bar_1)
        (receptacleType Fridge_bar_1 FridgeType)
        (receptacleAtLocation Fridge_bar_1 loc_bar_11)
        (openable Fridge_bar_1)
        (receptacleType GarbageCan_bar_1 GarbageCanType)
        (receptacleAtLocation GarbageCan_bar_1 loc_bar_12)
        (receptacleType Microwave_bar_1 MicrowaveType)
        (receptacleAtLocation Microwave_bar_1 loc_bar_13)
        (openable Microwave_bar_1)
        (receptacleType Sink_bar_1_bar_SinkBasin SinkBasinType)
        (receptacleAtLocation Sink_bar_1_bar_SinkBasin loc_bar_14)
        (receptacleType StoveBurner_bar_3 StoveBurnerType)
        (receptacleAtLocation StoveBurner_bar_3 loc_bar_15)
        (receptacleType StoveBurner_bar_2 StoveBurnerType)
        (receptacleAtLocation StoveBurner_bar_2 loc_bar_16)
        (receptacleType StoveBurner_bar_1 StoveBurnerType)
        (receptacleAtLocation StoveBurner_bar_1 loc_bar_17)
        (objectType Potato_bar_1 PotatoType)
        (inReceptacle Potato_bar_1 Fridge_bar_1)
        (objectAtLocation Potato_bar_1 loc_bar_11)
        (pickupable Potato_bar_1)
        (heatable Potato_bar_1)
        (coolable Potato_bar_1)
        (cleanable Potato_bar_1)
        (objectType Tomato_bar_1 TomatoType)
        (inReceptacle Tomato_bar_1 Fridge_bar_1)
        (objectAtLocation Tomato_bar_1 loc_bar_11)
        (pickupable Tomato_bar_1)
        (heatable Tomato_bar_1)
        (coolable Tomato_bar_1)
        (cleanable Tomato_bar_1)
        (objectType Lettuce_bar_1 LettuceType)
        (inReceptacle Lettuce_bar_1 Fridge_bar_1)
        (objectAtLocation Lettuce_bar_1 loc_bar_11)
        (pickupable Lettuce_bar_1)
        (coolable Lettuce_bar_1)
        (cleanable Lettuce_bar_1)
        (objectType Apple_bar_1 AppleType)
        (inReceptacle Apple_bar_1 DiningTable_bar_1)
        (objectAtLocation Apple_bar_1 loc_bar_7)
        (pickupable Apple_bar_1)
        (heatable Apple_bar_1)
        (coolable Apple_bar_1)
        (cleanable Apple_bar_1)
        (objectType Bread_bar_1 BreadType)
        (inReceptacle Bread_bar_1 DiningTable_bar_1)
        (objectAtLocation Bread_bar_1 loc_bar_7)
        (pickupable Bread_bar_1)
        (heatable Bread_bar_1)
        (coolable Bread_bar_1)
        (objectType Egg_bar_1 EggType)
        (inReceptacle Egg_bar_1 CounterTop_bar_1)
        (objectAtLocation Egg_bar_1 loc_bar_6)
        (pickupable Egg_bar_1)
        (heatable Egg_bar_1)
        (coolable Egg_bar_1)
        (cleanable Egg_bar_1)
        (objectType Pot_bar_1 PotType)
        (inReceptacle Pot_bar_1 StoveBurner_bar_2)
        (objectAtLocation Pot_bar_1 loc_bar_16)
        (pickupable Pot_bar_1)
        (coolable Pot_bar_1)
        (cleanable Pot_bar_1)
        (isReceptacleObject Pot_bar_1)
        (objectType Fork_bar_1 ForkType)
        (inReceptacle Fork_bar_1 Drawer_bar_1)
        (objectAtLocation Fork_bar_1 loc_bar_10)
        (pickupable Fork_bar_1)
        (cleanable Fork_bar_1)
        (objectType Bowl_bar_1 BowlType)
        (inReceptacle Bowl_bar_1 Cabinet_bar_2)
        (objectAtLocation Bowl_bar_1 loc_bar_4)
        (pickupable Bowl_bar_1)
        (coolable Bowl_bar_1)
        (cleanable Bowl_bar_1)
        (isReceptacleObject Bowl_bar_1)
        (objectType PepperShaker_bar_1 PepperShakerType)
        (inReceptacle PepperShaker_bar_1 CounterTop_bar_1)
        (objectAtLocation PepperShaker_bar_1 loc_bar_6)
        (pickupable PepperShaker_bar_1)
        (canContain CabinetType BowlType)
        (canContain CabinetType PepperShakerType)
        (canContain CabinetType PotType)
        (canContain CounterTopType AppleType)
        (canContain CounterTopType BowlType)
        (canContain CounterTopType BreadType)
        (canContain CounterTopType EggType)
        (canContain CounterTopType ForkType)
        (canContain CounterTopType LettuceType)
        (canContain CounterTopType PepperShakerType)
        (canContain CounterTopType PotType)
        (canContain CounterTopType PotatoType)
        (canContain CounterTopType TomatoType)
        (canContain DiningTableType AppleType)
        (canContain DiningTableType BowlType)
        (canContain DiningTableType BreadType)
        (canContain DiningTableType EggType)
        (canContain DiningTableType ForkType)
        (canContain DiningTableType LettuceType)
        (canContain DiningTableType PepperShakerType)
        (canContain DiningTableType PotType)
        (canContain DiningTableType PotatoType)
        (canContain DiningTableType TomatoType)
        (canContain DrawerType ForkType)
        (canContain DrawerType PepperShakerType)
        (canContain FridgeType AppleType)
        (canContain FridgeType BowlType)
        (canContain FridgeType BreadType)
        (canContain FridgeType EggType)
        (canContain FridgeType LettuceType)
        (canContain FridgeType PotType)
        (canContain FridgeType PotatoType)
        (canContain FridgeType TomatoType)
        (canContain GarbageCanType AppleType)
        (canContain GarbageCanType BreadType)
        (canContain GarbageCanType EggType)
        (canContain GarbageCanType LettuceType)
        (canContain GarbageCanType PotatoType)
        (canContain GarbageCanType TomatoType)
        (canContain MicrowaveType AppleType)
        (canContain MicrowaveType BowlType)
        (canContain MicrowaveType BreadType)
        (canContain MicrowaveType EggType)
        (canContain MicrowaveType PotatoType)
        (canContain MicrowaveType TomatoType)
        (canContain SinkBasinType AppleType)
        (canContain SinkBasinType BowlType)
        (canContain SinkBasinType EggType)
        (canContain SinkBasinType ForkType)
        (canContain SinkBasinType LettuceType)
        (canContain SinkBasinType PotType)
        (canContain SinkBasinType PotatoType)
        (canContain SinkBasinType TomatoType)
        (canContain StoveBurnerType PotType)
    )
    (:goal
        (and
            (exists (?r - receptacle ?o - object)
                (and
                    (heatable ?o)
                    (objectType ?o PotatoType)
                    (receptacleType ?r DiningTableType)
                    (isHot ?o)
                    (inReceptacle ?o ?r)
                )
            )
        )
    )
)
